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
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    for heading in ("## 1. Sequential", "## 2. Async", "## 3. Runner overhead", "## 4. Import"):
        assert heading in out
    for row in ("bare anthropic SDK (floor)", "scriptorium", "raw httpx2 POST (server check)"):
        assert f"| {row}" in out
    for peer in ("instructor", "pydantic-ai", "langchain-anthropic"):
        assert f"| {peer}" in out  # measured where installed, "not installed" where not
    assert "## Targets" in out
    ours = [
        line for line in out.splitlines() if line.startswith(("| bare anthropic", "| scriptorium"))
    ]
    assert len(ours) == 4  # both rows, in both call tables
    assert not [line for line in ours if "failed" in line]
