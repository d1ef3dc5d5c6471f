"""``python -m bench.stream --smoke`` still runs end to end and prints its tables (never timings)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_streaming_benchmark_runs_at_smoke_size() -> None:
    """Both rows stream from the paced loopback server; the partial-cost table is printed."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.stream", "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    for heading in ("## 1. Time to first token", "## 2. Client CPU", "## 3. Partial values"):
        assert heading in out
    for row in ("| bare anthropic SDK stream", "| scriptorium engine.stream", "| difference"):
        assert row in out
