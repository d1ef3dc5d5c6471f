"""``python -m bench --smoke`` still runs end to end and prints every table (never timings)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_benchmark_runs_at_smoke_size_and_prints_its_tables() -> None:
    """Every section completes against the loopback server; absent peers are reported, not fatal."""
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    headings = (
        "## 1. Sequential",
        "## 2. Async, one call at a time",
        "## 3. Async throughput",
        "## 4. Memory per in-flight run",
        "## 5. First run",
        "## 6. Runner overhead",
        "## 7. Import",
    )
    for heading in headings:
        assert heading in out
    ours = ("scriptorium, native", "scriptorium, prompt", "scriptorium, native, invoice")
    floors = ("bare anthropic SDK (floor)", "earlier floor: SDK + output_config, invoice")
    for row in (*floors, *ours, "raw httpx2 POST (server check)"):
        assert f"| {row} " in out
    for peer in ("instructor", "pydantic-ai", "langchain-anthropic"):
        assert f"| {peer}" in out  # measured where installed, "not installed" where not
    assert "## Targets" in out
    lines = [line for line in out.splitlines() if line.startswith(("| bare anthropic", "| scri"))]
    # floor + 3 of ours in each of the three call tables and the memory table, floor + 2 of ours
    # in the first-run table
    assert len(lines) == 4 * 4 + 3
    assert not [line for line in lines if "failed" in line]
