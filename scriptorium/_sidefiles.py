"""Files scriptorium writes beside a user's file: the one way they are named, created and removed.

A command that replaces a user's file whole (``batch --out``, ``test --junit``, a report, an
optimised prompt) writes a side file first and renames it over the target, so a reader never sees
half a file. A fixed side-file name (``X.tmp``) can be a user's own file, or a symbolic link an
attacker left to make scriptorium overwrite something else. So every side file is:

- named so no user file is likely to hold the name: ``.<target name>.scriptorium-<random>.<purpose>``
  (hidden, beside the target, so the final rename stays on one file system);
- created exclusively (``O_CREAT | O_EXCL``) and never through a symbolic link (``O_NOFOLLOW``):
  a taken name is refused with :class:`SideFileTaken`, which names it, and never written;
- removed only by the code that created it, and only when it did (a failed write, an interrupt).

:func:`replacing` is the context manager every writer uses; :func:`write_replacing` writes bytes
in one call; :func:`create_exclusive` is the exclusive open itself, for side files that keep a
fixed name (a lock, whose name two processes must agree on).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = [
    "MARK",
    "SideFile",
    "SideFileTaken",
    "create_exclusive",
    "replacing",
    "side_name",
    "write_replacing",
]

#: What every side file's name holds after the target's name.
MARK = ".scriptorium-"

_EXCLUSIVE = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_TRIES = 8


class SideFileTaken(FileExistsError):
    """A side file's name is already taken (a file, a directory or a symbolic link): refused, and
    the existing entry left as it is."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        super().__init__(
            f"{self.path} already exists; scriptorium writes its side files only under names it "
            "creates itself, and leaves this one alone: move it away"
        )

    def __str__(self) -> str:
        return str(self.args[0])


def side_name(target: str | os.PathLike[str], purpose: str) -> Path:
    """A fresh side-file name beside ``target`` for ``purpose`` (``tmp``, ...):
    ``.<name>.scriptorium-<random>.<purpose>``."""
    path = Path(target)
    return path.with_name(f".{path.name}{MARK}{secrets.token_hex(6)}.{purpose}")


def create_exclusive(path: str | os.PathLike[str], mode: int = 0o644) -> int:
    """Create ``path`` and open it for writing, exclusively and not through a symbolic link;
    the descriptor. :class:`SideFileTaken` when the name exists in any form."""
    try:
        return os.open(path, _EXCLUSIVE, mode)
    except FileExistsError as err:
        raise SideFileTaken(path) from err
    except OSError as err:
        # O_NOFOLLOW on a link answers ELOOP on some systems instead of EEXIST.
        if os.path.lexists(path):
            raise SideFileTaken(path) from err
        raise


class SideFile:
    """A new version of ``target`` being written: a side file created exclusively beside it
    (:func:`create_exclusive`, a fresh :func:`side_name`), open as ``handle`` (text in UTF-8
    when ``text``, else binary). :meth:`commit` renames it over ``target`` (a symbolic link at
    ``target`` is replaced, not followed); :meth:`discard` removes it (it is ours)."""

    def __init__(
        self,
        target: str | os.PathLike[str],
        *,
        purpose: str = "tmp",
        text: bool = False,
        make_parents: bool = False,
    ) -> None:
        self.target = Path(target)
        if make_parents:
            self.target.parent.mkdir(parents=True, exist_ok=True)
        fd, self.path = _fresh(self.target, purpose)
        try:
            self.handle: IO[Any] = (
                os.fdopen(fd, "w", encoding="utf-8") if text else os.fdopen(fd, "wb")
            )
        except BaseException:
            os.close(fd)
            self._remove()
            raise
        self._done = False

    def commit(self) -> None:
        """Flush, sync and close the side file, and rename it over the target."""
        try:
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.handle.close()
            os.replace(self.path, self.target)
        except BaseException:
            self.discard()
            raise
        self._done = True

    def discard(self) -> None:
        """Close and remove the side file (idempotent; nothing after :meth:`commit`)."""
        if self._done:
            return
        self._done = True
        with contextlib.suppress(OSError):
            self.handle.close()
        self._remove()

    def _remove(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path)  # ours: created exclusively


@contextlib.contextmanager
def replacing(
    target: str | os.PathLike[str], *, purpose: str = "tmp", make_parents: bool = False
) -> Iterator[IO[bytes]]:
    """Write a new version of ``target`` through a :class:`SideFile`: yields its binary handle;
    when the block ends normally the side file replaces ``target``, when it raises it is
    removed. ``make_parents`` creates missing directories."""
    side = SideFile(target, purpose=purpose, make_parents=make_parents)
    try:
        yield side.handle
    except BaseException:
        side.discard()
        raise
    side.commit()


def _fresh(path: Path, purpose: str) -> tuple[int, Path]:
    for _ in range(_TRIES - 1):
        side = side_name(path, purpose)
        try:
            return create_exclusive(side), side
        except SideFileTaken:
            continue  # a random name taken: try another
    side = side_name(path, purpose)
    return create_exclusive(side), side


def write_replacing(
    target: str | os.PathLike[str], data: bytes, *, make_parents: bool = False
) -> None:
    """Replace ``target`` with ``data`` through :func:`replacing`."""
    with replacing(target, make_parents=make_parents) as handle:
        handle.write(data)
