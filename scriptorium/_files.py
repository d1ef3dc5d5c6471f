"""Reading files confined to a directory: the one place the file adapters (prompts, profiles,
artifacts) touch the disk.

A path is checked *after* resolving symlinks, so a link inside the directory that points outside it
is refused, and the file actually opened is checked to be the one that was resolved. Each failure
is a :class:`FileProblem` with a ``kind`` and a message that names the relative path only; the
adapter turns it into its own sentinel.

Confinement assumes nobody rewrites the directory tree *while* a file is being read: the final
component is opened without following links and compared with what was resolved, which catches a
swapped file, but not every race an attacker with write access to the tree could stage.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

__all__ = [
    "ConfinedDir",
    "FileProblem",
    "FileSignature",
    "open_named_file",
    "read_named_file",
    "signature",
]

ProblemKind = Literal["missing", "outside", "not_file", "too_large", "unreadable"]

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)  # the resolved path's last part is never a link
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in cannot block the read
    | getattr(os, "O_CLOEXEC", 0)
)
_CHUNK = 1 << 20
_RESOLVED_LIMIT = 4096

#: What identifies one version of a file for caching: device, inode, size, mtime, ctime.
FileSignature = tuple[int, int, int, int, int]


def signature(st: os.stat_result) -> FileSignature:
    """The cache key of a file version (a rename or rewrite changes ctime even if mtime is kept)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class FileProblem(Exception):
    """Reading a confined file failed; ``kind`` says how, the message is safe to show."""

    def __init__(self, kind: ProblemKind, message: str) -> None:
        super().__init__(message)
        self.kind: ProblemKind = kind


@dataclass(frozen=True, slots=True)
class FileRead:
    """The bytes of a file and the status of the descriptor they were read from."""

    data: bytes
    stat: os.stat_result


class ConfinedDir:
    """A directory whose files may be read, and nothing outside it. The constructor does no I/O."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.path = Path(root)
        # The root as text with a separator, to join names onto (a Path join per stat costs more
        # than the stat).
        self._prefix = os.path.join(os.fspath(self.path), "")
        self._real: str | None = None
        # relative path -> (its real path, device, inode) as last resolved and confined.
        self._resolved: dict[str, tuple[str, int, int]] = {}

    def real_root(self) -> str:
        """The directory with symlinks resolved (computed once, on first use)."""
        if self._real is None:
            if "\x00" in os.fspath(self.path):
                raise FileProblem("unreadable", "the directory path holds a NUL character")
            self._real = os.path.realpath(self.path)
        return self._real

    def contains(self, real_path: str) -> bool:
        """Whether an already resolved path is the root or lies inside it."""
        root = self.real_root()
        return os.path.commonpath((root, real_path)) == root

    def resolve(self, relative: str) -> str:
        """The real path of ``relative`` (a path the caller has already checked lexically), refused
        unless it exists and stays inside the root once every symlink is followed."""
        if "\x00" in relative:
            raise FileProblem("unreadable", f"{relative!r} is not a usable path (NUL)")
        try:
            real = os.path.realpath(self.path / relative, strict=True)
        except (FileNotFoundError, NotADirectoryError) as err:
            raise FileProblem("missing", f"{relative} not found") from err
        except OSError as err:  # symlink loops, permissions, name too long
            raise FileProblem("unreadable", f"{relative} cannot be resolved ({_why(err)})") from err
        except ValueError as err:  # a NUL in the root
            raise FileProblem("unreadable", f"{relative} cannot be resolved (bad path)") from err
        if not self.contains(real):
            raise FileProblem("outside", f"{relative} resolves outside its directory")
        return real

    def resolves_inside(self, relative: str) -> bool:
        """Whether ``relative`` exists and stays inside the root (for listings)."""
        try:
            self.resolve(relative)
        except FileProblem:
            return False
        return True

    def current(self, relative: str) -> FileSignature | None:
        """The signature of ``relative`` now (one ``stat``), or None when it cannot be read, so that
        a cache check misses and the full load reports what is wrong."""
        try:
            return signature(os.stat(self._prefix + relative))
        except (OSError, ValueError):  # ValueError: a NUL in the path
            return None

    def read(self, relative: str, *, max_bytes: int | None) -> FileRead:
        """Resolve, confine and read ``relative``; more than ``max_bytes`` bytes is refused before
        reading (by size) and while reading (in case the file grows).

        A path read before is not resolved again (a realpath costs an ``lstat`` per component, on
        every run for every artifact): when the name still leads to the very file (device and
        inode) that was resolved and confined then, and its real path opens that same file, it is
        read directly; anything else — a retargeted link, a swapped file or directory — takes the
        full way again.
        """
        known = self._resolved.get(relative)
        if known is not None:
            try:
                # The name must still lead to that file (a link may have been retargeted) ...
                now = os.stat(self._prefix + relative)
                same = (now.st_dev, now.st_ino) == known[1:]
                # ... and what is opened must be it too (a directory may have been swapped).
                fd = os.open(known[0], _OPEN_FLAGS) if same else -1
            except (OSError, ValueError):
                fd = -1
            if fd >= 0:
                try:
                    st = os.fstat(fd)
                except OSError:
                    st = None
                if st is not None and (st.st_dev, st.st_ino) == known[1:]:
                    return self._read_fd(fd, st, relative, max_bytes)
                os.close(fd)
            self._resolved.pop(relative, None)
        real = self.resolve(relative)
        try:
            fd = os.open(real, _OPEN_FLAGS)
        except FileNotFoundError as err:
            raise FileProblem("missing", f"{relative} not found") from err
        except OSError as err:
            raise FileProblem("unreadable", f"{relative} cannot be opened ({_why(err)})") from err
        try:
            st = os.fstat(fd)
        except OSError as err:
            os.close(fd)
            raise FileProblem("unreadable", f"{relative} cannot be read ({_why(err)})") from err
        read = self._read_fd(fd, st, relative, max_bytes)
        if len(self._resolved) >= _RESOLVED_LIMIT:
            self._resolved.clear()
        self._resolved[relative] = (real, st.st_dev, st.st_ino)
        return read

    @staticmethod
    def _read_fd(fd: int, st: os.stat_result, relative: str, max_bytes: int | None) -> FileRead:
        """Check and read an open descriptor, closing it."""
        try:
            if not stat.S_ISREG(st.st_mode):
                raise FileProblem("not_file", f"{relative} is not a regular file")
            if max_bytes is not None and st.st_size > max_bytes:
                raise FileProblem("too_large", _too_large(relative, st.st_size, max_bytes))
            data = _read_at_most(
                fd, None if max_bytes is None else max_bytes + 1, expected=st.st_size
            )
        except OSError as err:
            raise FileProblem("unreadable", f"{relative} cannot be read ({_why(err)})") from err
        finally:
            os.close(fd)
        if max_bytes is not None and len(data) > max_bytes:
            raise FileProblem("too_large", _too_large(relative, len(data), max_bytes))
        return FileRead(data, st)


def read_named_file(path: str | os.PathLike[str], *, max_bytes: int, label: str) -> bytes:
    """The bytes of a file the user named directly (``--inputs FILE``, ``batch --in FILE``): not
    confined to a directory, but read the same bounded way as every other file. It must be a
    regular file (a FIFO or a device is refused without blocking: it is opened non-blocking and
    checked with ``fstat`` before any read) of at most ``max_bytes`` bytes. ``label`` names it in
    messages (the path as the user typed it)."""
    try:
        fd = os.open(path, _NAMED_FLAGS)
    except FileNotFoundError as err:
        raise FileProblem("missing", f"{label} not found") from err
    except (OSError, ValueError) as err:  # ValueError: a NUL in the path
        why = _why(err) if isinstance(err, OSError) else "malformed path"
        raise FileProblem("unreadable", f"{label} cannot be opened ({why})") from err
    try:
        st = os.fstat(fd)
    except OSError as err:
        os.close(fd)
        raise FileProblem("unreadable", f"{label} cannot be read ({_why(err)})") from err
    return ConfinedDir._read_fd(fd, st, label, max_bytes).data


def open_named_file(path: str | os.PathLike[str], *, label: str) -> IO[bytes]:
    """A file the user named, opened for streaming: checked to be a regular file without blocking
    first (as :func:`read_named_file`), for files too large to hold in memory at once."""
    try:
        fd = os.open(path, _NAMED_FLAGS)
    except FileNotFoundError as err:
        raise FileProblem("missing", f"{label} not found") from err
    except (OSError, ValueError) as err:
        why = _why(err) if isinstance(err, OSError) else "malformed path"
        raise FileProblem("unreadable", f"{label} cannot be opened ({why})") from err
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileProblem("not_file", f"{label} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


# A named file may be reached through links (the user chose it); everything else is as above.
_NAMED_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def _read_at_most(fd: int, limit: int | None, *, expected: int = 0) -> bytes:
    # The first read asks for the whole file as stat saw it (plus one byte, to notice growth):
    # a file read in one piece is returned as is, without joining chunks into a second copy
    # (a 20 MB PDF would otherwise be held twice).
    chunks: list[bytes] = []
    total = 0
    want = expected + 1 if expected > 0 else _CHUNK
    while limit is None or total < limit:
        chunk = os.read(fd, want if limit is None else min(want, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        want = _CHUNK
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _too_large(relative: str, size: int, max_bytes: int) -> str:
    return f"{relative} is larger than {max_bytes} bytes ({size}+)"


def _why(err: OSError) -> str:
    # The strerror only: str(err) repeats the absolute path.
    return err.strerror or type(err).__name__
