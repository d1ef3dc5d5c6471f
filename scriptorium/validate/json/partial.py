"""Partial JSON values of a text that is still being written.

:class:`PartialJSON` is fed the chunks of a streamed output and says, after each one, whether the
value readable from the text so far changed. It parses with ``jiter``'s partial mode (extra
``stream``; imported on first use). Two rules keep the values honest and the cost linear:

- **Only what is complete counts.** The text is cut after its last structural character
  (``{ } [ ] , "``) before it is parsed, and incomplete strings are left out, so a number or a
  ``true`` still being written never shows up half-done, and a value once shown only grows.
- **Re-parse only when a value can have changed.** A chunk without a structural character cannot
  complete anything, so it is not parsed at all. Past :data:`EAGER_BYTES`, a re-parse also waits
  until the text has grown by :data:`GROWTH` of what was parsed last, so the bytes parsed over a
  whole output stay within a constant factor of its length (the sizes parsed grow geometrically).

Prose or a code fence before the value is skipped: a text that does not start (after whitespace)
like a JSON value is read from its first ``{`` or ``[``. A text ``jiter`` cannot read
(single quotes, comments) simply yields no partial values; the lenient parser decides at the end.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["EAGER_BYTES", "GROWTH", "PartialJSON", "available"]

#: Below this many characters every chunk that may complete a value is parsed.
EAGER_BYTES = 1024
#: Past :data:`EAGER_BYTES`, the fraction by which the text must grow before it is parsed again.
GROWTH = 1 / 16

# A key and its colon change nothing (a key without a value is left out), so ``:`` is not here.
_STRUCTURAL = frozenset('{}[],"')
_VALUE_START = frozenset('{["-0123456789')
_UNSET: Any = object()
_log = logging.getLogger(__name__)
_jiter: Any = None


def _load() -> Any:
    """The ``jiter`` module, or None when it is not installed."""
    global _jiter
    if _jiter is None:
        try:
            import jiter
        except ImportError:
            _log.debug("jiter is not installed: no partial values while streaming")
            _jiter = False
        else:
            _jiter = jiter
    return _jiter or None


def available() -> bool:
    """Whether partial values can be parsed (``jiter`` is installed)."""
    return _load() is not None


class PartialJSON:
    """The growing value of a streamed JSON text (see the module doc).

    ``feed(chunk)`` returns True when :attr:`value` changed; :attr:`parses` counts the re-parses
    and :attr:`parsed_bytes` the characters they read, so tests and benchmarks can hold the cost to
    its bound.
    """

    __slots__ = (
        "_cut",
        "_parsed_cut",
        "_parts",
        "_prose",
        "_size",
        "_start",
        "parsed_bytes",
        "parses",
        "value",
    )

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._size = 0
        #: Where the value starts in the text (-1 until found).
        self._start = -1
        #: The end of the complete prefix (one past the last structural character).
        self._cut = 0
        #: ``_cut`` when the text was last parsed.
        self._parsed_cut = 0
        self._prose = False
        self.value: Any = _UNSET
        self.parses = 0
        self.parsed_bytes = 0

    @property
    def has_value(self) -> bool:
        """Whether a value has been read yet."""
        return self.value is not _UNSET

    def feed(self, chunk: str) -> bool:
        """Add ``chunk``; True when the value readable from the text so far changed."""
        if not chunk:
            return False
        offset = self._size
        self._parts.append(chunk)
        self._size += len(chunk)
        if self._start < 0 and not self._find_start(chunk, offset):
            return False
        # The last structural character, scanned from the end (it is usually near it).
        index = len(chunk)
        for char in reversed(chunk):
            if char in _STRUCTURAL:
                self._cut = max(self._cut, offset + index)
                break
            index -= 1
        new = self._cut - self._parsed_cut
        if new <= 0 or self._cut <= self._start:
            return False
        done = self._parsed_cut - self._start
        if done > EAGER_BYTES and new < (done - EAGER_BYTES) * GROWTH:
            return False
        return self._parse(self._cut)

    def finish(self) -> bool:
        """The text is complete: parse all of it (a trailing number or literal included)."""
        if self._start < 0 or self._parsed_cut >= self._size:
            return False
        return self._parse(self._size)

    def _find_start(self, chunk: str, offset: int) -> bool:
        """Look for where the value starts; chunks are searched once each."""
        if not self._prose:
            stripped = chunk.lstrip()
            if not stripped:
                return False
            if stripped[0] in _VALUE_START:
                self._start = offset + len(chunk) - len(stripped)
                self._parsed_cut = self._start
                return True
            self._prose = True  # prose or a code fence first: the value starts at a bracket
        braces = [i for i in (chunk.find("{"), chunk.find("[")) if i >= 0]
        if not braces:
            return False
        self._start = offset + min(braces)
        self._parsed_cut = self._start
        return True

    def _parse(self, end: int) -> bool:
        jiter = _load()
        if jiter is None:
            return False
        text = "".join(self._parts)
        if len(self._parts) > 1:
            self._parts = [text]  # joined once per parse, not once per chunk
        piece = text[self._start : end]
        self._parsed_cut = end
        self.parses += 1
        self.parsed_bytes += len(piece)
        try:
            value = jiter.from_json(piece.encode("utf-8"), partial_mode="on")
        except ValueError:
            return False
        if self.value is not _UNSET and value == self.value:
            return False
        self.value = value
        return True
