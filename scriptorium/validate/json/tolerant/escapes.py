"""Backslashes inside strings.

JSON's escapes, ``\\u`` escapes with surrogate pairs (a lone surrogate is refused), and ``\\'``,
which Python and JavaScript both read as a quote. A string whose backslashes start no escape any
reader knows (``"C:\\Users\\x"``, ``"\\d+"``) keeps them as text, as Python does; a known escape
among unknown ones (``"C:\\new\\x"``) reads two ways and is refused.
"""

from __future__ import annotations

import re

from scriptorium.validate.json.tolerant.cursor import Cursor, ReadError

__all__ = ["backslashes_are_text", "escape_meant", "read_escape"]

_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# What follows a backslash that some reader (JSON, Python, JavaScript) reads as an escape.
_MEANT_ESCAPE = re.compile(
    r"\\(?:[\"'`“”‘’\\/bfnrtva0-9\n\r]|u[0-9a-fA-F]|u\{|x[0-9a-fA-F]|U[0-9a-fA-F]{8}|N\{)"
)


def backslashes_are_text(cur: Cursor, pos: int, closers: str) -> bool:
    r"""Whether no backslash from ``pos`` to the next quote that may close the string (or the
    line end) starts an escape any reader knows (``"C:\Users\x"``, ``"\d+"``): then the
    backslashes are text, as Python keeps them, and nobody meant JavaScript's dropping
    them. One known escape among them (``"C:\new\x"``) leaves the string refused."""
    text = cur.text
    cursor = pos
    while cursor < cur.end and text[cursor] not in closers and text[cursor] not in "\n\r":
        if text[cursor] == "\\":
            if escape_meant(text, cursor):
                return False
            cursor += 1
        cursor += 1
    if cursor > cur.reach:
        cur.reach = cursor
    cur.note("literal_backslash")
    return True


def read_escape(cur: Cursor, pos: int, *, single: bool) -> tuple[str, int]:
    text = cur.text
    if pos + 1 >= cur.end:
        raise ReadError(pos, "truncated", "the text ends inside an escape")
    code = text[pos + 1]
    if code in _ESCAPES:
        return _ESCAPES[code], pos + 2
    if code == "'":
        if not single:
            cur.note("needless_escape")  # ``\'`` is ``'`` to Python and JavaScript alike
        return "'", pos + 2
    if code != "u":
        raise ReadError(pos, "parse", f"invalid escape \\{code}")
    unit, pos = _read_unit(cur, pos)
    if 0xD800 <= unit <= 0xDBFF and text.startswith("\\u", pos):
        low, after = _read_unit(cur, pos)
        if 0xDC00 <= low <= 0xDFFF:
            return chr(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)), after
    if 0xD800 <= unit <= 0xDFFF:
        raise ReadError(pos, "parse", "lone surrogate escape (not encodable as UTF-8)")
    return chr(unit), pos


def _read_unit(cur: Cursor, pos: int) -> tuple[int, int]:
    match = _HEX4.match(cur.text, pos + 2)
    if match is None:
        if pos + 6 > cur.end:
            raise ReadError(pos, "truncated", "the text ends inside a \\u escape")
        raise ReadError(pos, "parse", "invalid \\u escape")
    return int(match.group(), 16), match.end()


def escape_meant(text: str, pos: int) -> bool:
    """Whether the backslash at ``pos`` starts an escape some reader knows."""
    return _MEANT_ESCAPE.match(text, pos) is not None or pos + 1 >= len(text)
