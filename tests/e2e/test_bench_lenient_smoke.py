"""``python -m bench.lenient --smoke`` runs and prints its table (never a timing assertion)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.lenient import FAMILIES

ROOT = Path(__file__).resolve().parents[2]


def test_the_lenient_benchmark_runs_at_smoke_size_and_prints_every_family() -> None:
    """Every family is built and parsed at both smoke sizes; the table lists each one."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.lenient", "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "# Lenient parsing: time against input size" in done.stdout
    for family in FAMILIES:
        assert f"| {family.name}" in done.stdout
