"""``python -m bench.observe --smoke`` runs and prints its table (never asserting a timing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_observability_benchmark_runs_at_smoke_size() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.observe", "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for row in ("| off (no observer)", "| on, API no-op providers", "| on, SDK providers"):
        assert row in done.stdout
    assert "Off path alone" in done.stdout
