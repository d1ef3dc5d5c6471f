"""JSON lines: the one way scriptorium splits and parses them, and an append-only journal that a
crash cannot corrupt for the next reader.

Every JSON-lines reader (batch input, batch output read back for a resume, replay cassettes,
provider batch results) splits with :func:`jsonl_lines` or :func:`jsonl_file_lines`: at ``"\n"``
only (a ``"\r"`` before it dropped), never with ``str.splitlines()``, which also splits at
U+2028, U+2029, U+0085 and a few control characters that JSON strings may hold raw, turning one
good line into two broken ones and shifting every later line number. Every reader of untrusted
JSON parses with :func:`load_json`, which refuses nesting too deep to parse (``ValueError``)
instead of letting ``RecursionError`` escape.

A record is written as one ``write`` of one whole line on an ``O_APPEND`` descriptor, so two
writers never interleave and a record is either all there or torn at its end. A torn last line (a
crash, a kill, a full disk in the middle of a write) has no newline; when the journal is opened
again that tail is cut off before anything is appended, so the next record starts on a line of its
own instead of being glued onto the torn one (which would lose both).
"""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any, TypeVar

__all__ = ["Journal", "TooDeep", "jsonl_file_lines", "jsonl_lines", "load_json"]

_Line = TypeVar("_Line", str, bytes)


class TooDeep(ValueError):
    """A JSON document nested deeper than the parser can follow."""


def load_json(text: str | bytes) -> Any:
    """``json.loads(text)``; ``ValueError`` (:class:`TooDeep` for nesting too deep to parse,
    ``json.JSONDecodeError`` for the rest) for anything that is not a JSON document."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TooDeep("the JSON is nested too deeply to read") from None


def _numbered(lines: Iterable[_Line], cr: _Line) -> Iterator[tuple[int, _Line]]:
    for number, line in enumerate(lines, start=1):
        yield number, line[:-1] if line.endswith(cr) else line


def jsonl_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` for each line of ``text``, split at ``"\n"`` only, a ``"\r"``
    before it dropped; blank lines included (their numbers count). No empty last line for a
    text that ends with a newline."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return _numbered(lines, "\r")


def jsonl_file_lines(handle: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """The same for a file opened in binary mode, read line by line (iterating a binary file
    splits at ``b"\n"`` only)."""
    return _numbered((line[:-1] if line.endswith(b"\n") else line for line in handle), b"\r")


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
