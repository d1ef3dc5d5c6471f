"""An append-only JSON-lines journal that a crash cannot corrupt for the next reader.

A record is written as one ``write`` of one whole line on an ``O_APPEND`` descriptor, so two
writers never interleave and a record is either all there or torn at its end. A torn last line (a
crash, a kill, a full disk in the middle of a write) has no newline; when the journal is opened
again that tail is cut off before anything is appended, so the next record starts on a line of its
own instead of being glued onto the torn one (which would lose both).
"""

from __future__ import annotations

import os
import stat
import threading
from types import TracebackType

__all__ = ["Journal"]

_FLAGS = (
    os.O_RDWR
    | os.O_APPEND
    | os.O_CREAT
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO in its place is refused below, not waited on
    | getattr(os, "O_CLOEXEC", 0)
)
_TAIL_CHUNK = 1 << 16


class Journal:
    """The journal file at ``path``, opened for appending (created when missing). Raises
    ``OSError`` when it cannot be opened or is not a regular file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._fd = os.open(path, _FLAGS, 0o644)
        self._lock = threading.Lock()
        try:
            if not stat.S_ISREG(os.fstat(self._fd).st_mode):
                raise OSError(f"{os.fspath(path)!r} is not a regular file")
            self.dropped = _cut_torn_tail(self._fd)
        except BaseException:
            os.close(self._fd)
            raise

    def append(self, line: str) -> None:
        """Write ``line`` (one JSON document, no newline in it) as one whole line."""
        data = (line + "\n").encode("utf-8")
        with self._lock:
            written = os.write(self._fd, data)
            while written < len(data):  # a short write (full disk): finish or fail loudly
                more = os.write(self._fd, data[written:])
                if more <= 0:
                    raise OSError("short write to the journal")
                written += more

    def close(self) -> None:
        """Close the file (idempotent)."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> Journal:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _cut_torn_tail(fd: int) -> int:
    """Truncate the file after its last newline; returns how many bytes were dropped."""
    size = os.fstat(fd).st_size
    end = size
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        chunk = os.pread(fd, end - start, start)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            keep = start + newline + 1
            break
        end = start
    else:
        keep = 0
    if keep < size:
        os.ftruncate(fd, keep)
    return size - keep
