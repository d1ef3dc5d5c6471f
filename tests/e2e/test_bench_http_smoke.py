"""``python -m bench.http --smoke`` still runs end to end: scriptorium serve in a subprocess, both
tables printed (never a timing asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_http_benchmark_runs_at_smoke_size() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.http", "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "## HTTP API: one request at a time" in out
    assert "## HTTP API: 10 in flight" in out
    assert "| library: await engine.arun |" in out
    assert "| HTTP: POST /v1/runs to scriptorium serve |" in out
    assert "Overhead per request:" in out
    assert "Throughput HTTP / library:" in out
