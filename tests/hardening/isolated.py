"""Running a hang or memory case in a child process that cannot take the suite down with it.

The child gets an address-space limit (``RLIMIT_AS``) and the parent a timeout: a case that would
hang or eat memory fails its test instead of stalling or killing the run.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

__all__ = ["MEMORY_LIMIT", "TIMEOUT_S", "run_isolated"]

#: Generous for a normal case (imports, one run), far below what a bomb would need.
MEMORY_LIMIT = 2 << 30
#: A budget no normal case comes near, even on a loaded machine; a hang ends here.
TIMEOUT_S = 120.0
_REPO = Path(__file__).resolve().parents[2]


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_isolated(code: str, *, cwd: str | os.PathLike[str] | None = None) -> str:
    """Run ``code`` with this interpreter in a limited child; return its stdout. The child must
    exit 0 within :data:`TIMEOUT_S`, or the calling test fails saying why."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            cwd=cwd or _REPO,
            preexec_fn=_limit_memory,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        raise AssertionError(f"the case did not finish within {TIMEOUT_S:g}s") from err
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout
