"""The state file: written whole and atomically, so a kill at any instant leaves either the old
state or the new one on disk, never a torn one."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import tempfile
from pathlib import Path

from scriptorium._files import read_named_file
from scriptorium._journal import load_json
from scriptorium._sidefiles import MARK
from scriptorium.batch.state import BatchState
from scriptorium.errors import InvalidRequestError, translate

__all__ = ["MAX_STATE_BYTES", "StateFile"]

#: The largest state file read (it lists every row's request hash: far below this in practice).
MAX_STATE_BYTES = 1 << 30


class StateFile:
    """One job's state file at ``path``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def exists(self) -> bool:
        return self.path.exists()

    def load(self) -> BatchState:
        """The saved state; ``InvalidRequestError`` when the file is not a batch state."""
        with translate(InvalidRequestError, f"reading the batch state {self.path}", field="state"):
            # The bounded regular-file read every file goes through (a FIFO is refused, not
            # waited on).
            raw = read_named_file(self.path, max_bytes=MAX_STATE_BYTES, label=str(self.path))
            data = load_json(raw.decode("utf-8"))
            return BatchState.from_json(data)

    def save(self, state: BatchState) -> None:
        """Write ``state``: a temporary file in the same directory, flushed and fsynced, then
        ``os.replace``d over the old one, and the directory fsynced so the rename is durable."""
        text = json.dumps(state.to_json(), ensure_ascii=False, separators=(",", ":"))
        directory = self.path.parent
        with translate(InvalidRequestError, f"writing the batch state {self.path}", field="state"):
            # Named as every side file is (_sidefiles), so the sweep below can only ever match
            # files scriptorium made; mkstemp creates it exclusively.
            fd, temp = tempfile.mkstemp(
                prefix=f".{self.path.name}{MARK}", suffix=".tmp", dir=directory
            )
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(text)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(temp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
            _fsync_dir(directory)
        self._sweep()

    def _sweep(self) -> None:
        """Remove temporary files a killed save left behind (only one process writes a job)."""
        for stale in self.path.parent.glob(f".{glob.escape(self.path.name)}{MARK}*.tmp"):
            with contextlib.suppress(OSError):
                stale.unlink()

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _fsync_dir(directory: Path) -> None:
    # Not every platform can open a directory for fsync (Windows); the rename is still atomic.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
