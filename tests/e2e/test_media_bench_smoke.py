"""``python -m bench.media_memory`` runs end to end on a small PDF and prints its table; the
memory ratio is asserted (an allocation count, not a timing)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_media_memory_benchmark_runs_and_stays_under_three_times_the_file() -> None:
    """Both adapters send a 2 MB PDF through the loopback server holding < 3x its size."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.media_memory", "--mb", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    rows = re.findall(
        r"^\| (anthropic|openai) \| .*? \| ([\d.]+)x \| ([\d.]+)x \|", done.stdout, re.M
    )
    assert [r[0] for r in rows] == ["anthropic", "openai"]
    assert all(float(run) < 3.0 for _, _, run in rows)
