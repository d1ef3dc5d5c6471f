"""pytest run as a real process over a project on disk, for the plugin's end-to-end tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: The checkout, put on the child's path so it imports this tree's scriptorium.
REPO = Path(__file__).resolve().parents[2]


def run_pytest(
    root: Path, *args: str, timeout_s: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``root`` (no cache, no summary of results), its output
    captured; the caller checks the exit code."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rN", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
