"""One batch per output file at a time: an exclusive lock beside ``--out``.

Two ``scriptorium batch`` processes writing the same output would interleave their temporary file
and journal and leave a file with torn lines and missing rows. So a batch holds an exclusive lock
on ``.<out>.scriptorium-lock`` (``flock`` on POSIX, ``msvcrt.locking`` on Windows) from before it reads
anything until its output is in place. The lock file holds the holder's pid, so a second batch on
the same output stops at once (``InvalidRequestError``, exit 2) naming that pid.

The kernel releases the lock when its holder dies, so a lock file left by a killed batch never
blocks the next one. The holder removes the file when it is done, while still holding the lock;
a process that opened the old file just before finds, once it holds the lock, that the path no
longer names the file it locked, and starts over on the new one, so two processes can never both
believe they hold it. The lock's name is hidden and marked as scriptorium's, so no user's own
file is truncated or removed as a lock, and it is nothing a batch reads as output (those are
``--out`` and its journal).
"""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path
from types import TracebackType

from scriptorium.errors import InvalidRequestError

__all__ = ["LOCK_SUFFIX", "OutputLock", "lock_path"]

#: What the lock file's name adds to the output's (after a dot, so it is hidden): a name no
#: user's own file is likely to hold, since the lock file is truncated and removed.
LOCK_SUFFIX = ".scriptorium-lock"
# How long to wait for a holder that has just taken the lock to write its pid.
_PID_WAIT_S = 0.5
# Never through a symlink (the file is truncated once locked), never waiting on a FIFO.
_FLAGS = (
    os.O_RDWR
    | os.O_CREAT
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def lock_path(out: Path) -> Path:
    """The lock file of output ``out``."""
    return out.with_name(f".{out.name}{LOCK_SUFFIX}")


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _same_file(fd: int, path: Path) -> bool:
    try:
        held, named = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


def _holder(fd: int) -> int | None:
    """The pid written in the lock file open on ``fd`` (None: not written yet, or unreadable)."""
    deadline = time.monotonic() + _PID_WAIT_S
    while True:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            text = os.read(fd, 32).decode("ascii", errors="replace").strip()
        except OSError:
            text = ""
        if text.isdigit():
            return int(text)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


class OutputLock:
    """The exclusive lock of output ``out``, held as a context manager (see the module)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.path = lock_path(out)
        self._fd = -1

    def acquire(self) -> None:
        """Take the lock; ``InvalidRequestError`` naming the holder's pid when another process
        has it, or when the lock file cannot be made."""
        while True:
            try:
                fd = os.open(self.path, _FLAGS, 0o644)
            except OSError as err:
                raise InvalidRequestError(
                    f"--out: cannot lock {self.out} ({type(err).__name__}: cannot create "
                    f"{self.path.name})",
                    field="out",
                ) from err
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise InvalidRequestError(
                    f"--out: cannot lock {self.out}: {self.path.name} is not a regular file",
                    field="out",
                )
            if not _try_lock(fd):
                try:
                    pid = _holder(fd)
                finally:
                    os.close(fd)
                who = "another process" if pid is None else f"process {pid}"
                raise InvalidRequestError(
                    f"--out {self.out} is being written by another batch ({who} holds "
                    f"{self.path.name}); wait for it to end or choose another --out",
                    field="out",
                )
            if _same_file(fd, self.path):
                break
            os.close(fd)  # the holder removed the file we opened: lock the one there now
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        self._fd = fd

    def release(self) -> None:
        """Remove the lock file, then let the lock go (idempotent)."""
        fd, self._fd = self._fd, -1
        if fd < 0:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            try:
                _unlock(fd)
            finally:
                os.close(fd)

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
