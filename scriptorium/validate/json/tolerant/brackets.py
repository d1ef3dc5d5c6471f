"""Where a container ends: wrong, stray and missing closing brackets.

A closing bracket of the wrong kind stands for the expected one, or the expected one is missing
before it (a choice, limited so one wrong bracket never stands for several); an empty container
closed by the wrong kind (``{]``) is ``{}`` or ``[]``; and the outermost bracket, when members or
items follow it, either closes the value (a reading that only competes, ``continued_at``) or is
stray.
"""

from __future__ import annotations

from typing import Any

from scriptorium.validate.json.tolerant.cursor import CLOSING, INLINE_SPACE, Cursor, ReadError
from scriptorium.validate.json.tolerant.keys import KEY_NUMBER, QUOTED_KEY
from scriptorium.validate.json.tolerant.literals import IDENT, KEY_WORD, LITERALS, is_number_start
from scriptorium.validate.json.tolerant.quotes import QUOTES
from scriptorium.validate.json.tolerant.strings import PYTHON_PREFIX

__all__ = ["after_close", "close_empty", "starts_value", "wrong_closer"]


def after_close(cur: Cursor, end: int, depth: int, opener: str, *, stray: bool = True) -> int:
    """``end`` past the outermost container's closing bracket, where members or items may
    follow that continue the value (``{"a": 1}, "b": 2}``). Then either the value closed
    there (``continued_at`` is set: the reading only competes), or (``stray``: not for an
    empty container) the bracket is stray and the container goes on: returned as ``-end``."""
    if depth != 1 or not _continues(cur, end, opener):
        return end
    if not stray or cur.choose(2) == 0:
        cur.continued_at = end
        return end
    if cur.assumed_missing:
        # A bracket taken for missing and then one left over: the two slips cancel, and
        # the reading where the wrong bracket stands for the missing one has neither.
        raise ReadError(end - 1, "parse", "a bracket taken for missing and one left over")
    cur.note("removed_stray_bracket")
    return -end


def _continues(cur: Cursor, pos: int, opener: str) -> bool:
    """Whether what follows ``pos`` continues a closed object (a comma and a key, or a quoted
    key and a colon) or array (a comma and a value), more stray closing brackets allowed
    before it (``{"a": 1}}, "b": 2}``)."""
    try:
        pos = cur.skip_space(pos, note=False)
        while pos < cur.end and cur.text[pos] in CLOSING:
            pos = cur.skip_space(pos + 1, note=False)
    except ReadError:
        return False
    if pos >= cur.end:
        return False
    comma = cur.text[pos] in ",，"
    while pos < cur.end and cur.text[pos] in ",，":  # ``],, null]``: commas, then more
        try:
            pos = cur.skip_space(pos + 1, note=False)
        except ReadError:
            return False
    if comma and pos >= cur.end:
        # ``{"a": 1},`` at the end: the generation stopped before what came next.
        raise ReadError(pos, "truncated", "the text ends after a comma following the value")
    text = cur.text
    if opener == "[":
        return comma and starts_value(cur, pos)
    if QUOTED_KEY.match(text, pos) is not None:
        return True
    if not comma:
        return False
    if text[pos] in QUOTES:
        return True
    word = KEY_WORD.match(text, pos) or KEY_NUMBER.match(text, pos)
    if word is None:
        return False
    after = INLINE_SPACE.match(text, word.end()).end()  # type: ignore[union-attr]
    return after < cur.end and text[after] in ":："


def close_empty(cur: Cursor, pos: int, opener: str) -> tuple[Any, int]:
    """An empty container closed by the wrong kind of bracket (``{]``): nothing inside says
    which was meant, ``{}`` or ``[]``."""
    cur.note("mismatched_bracket")
    as_opened = cur.choose(2) == 0
    return ({} if as_opened == (opener == "{") else []), pos + 1


def starts_value(cur: Cursor, pos: int) -> bool:
    char = cur.text[pos]
    if char in QUOTES or char in "{[(" or is_number_start(cur, pos):
        return True
    match = IDENT.match(cur.text, pos)
    return match is not None and (
        match.group() in LITERALS or PYTHON_PREFIX.match(cur.text, pos) is not None
    )


def wrong_closer(cur: Cursor, pos: int) -> int:
    """A closing bracket of the wrong kind at ``pos``: it stands for the expected one
    (consumed), or the expected one is missing before it (left for the enclosing value)."""
    cur.note("mismatched_bracket")
    expected = "]" if cur.text[pos] == "}" else "}"
    if cur.missing_before == pos or expected in cur.swallowed:
        # (A string that read ``"}`` as text, then a ``}`` taken for missing: the slips
        # cancel, and the reading where the quote closed has neither.)
        # One wrong bracket stands for one missing bracket, not for several: ``[[1, 2}``
        # read as ``[[1, 2]]`` would close a value that was cut off.
        return pos + 1
    if cur.choose(2) == 0:
        return pos + 1
    cur.assumed_missing = True
    cur.missing_before = pos
    return pos
