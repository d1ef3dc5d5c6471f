"""Unquoted member values: ``{"city": New York}``.

An unquoted value is a literal or runs of words read as one string: it ends at a comma, a quote, a
bracket that closes the member or the end of its line, takes in a bracketed group attached to a
word (``words{in brackets}``) and goes on over lines that do not start a member. Words that some
reader takes for a literal, or that look like a misspelled one, are a choice. Code (``new X(1)``,
``ObjectId("..")``) and quoted words inside the run are refused.
"""

from __future__ import annotations

import re
from typing import Any

from scriptorium.validate.json.tolerant.cursor import (
    INLINE_SPACE,
    JSON_SPACE,
    Cursor,
    ReadError,
    clip,
)
from scriptorium.validate.json.tolerant.literals import (
    KEY_WORD,
    LITERALS,
    NON_FINITE,
    NOT_A_LITERAL,
    WORDLIKE_LITERALS,
    spelled_literal,
)
from scriptorium.validate.json.tolerant.quotes import QUOTES, may_close

__all__ = ["read_bare"]

# An unquoted string value runs to a comma, a bracket, a quote or the end of the line; a colon
# inside it is fine unless a space or quote follows (``a: b`` looks like a member, ``http://`` not).
_BARE_RUN = re.compile(r"(?:[^,，:{}\[\]\"“”\n\r]|:(?![\s\"]))*")
# A comment after an unquoted value (after a space: ``a#b`` and ``http://x`` are text).
_BARE_COMMENT = re.compile(r"\s(?://|/\*|#)")
# A quoted word inside an unquoted run: the run is no value.
_QUOTED_WORD = re.compile(r"(?:^|\s)['‘`]")
# Code, not a value: a constructor (``new NumberInt(5)``) or a call (``ObjectId(``, ``Date.now()``).
_CODE_VALUE = re.compile(r"new\s+[A-Za-z_$]|.*?[\w$.]\(")


def read_bare(cur: Cursor, pos: int) -> tuple[Any, int]:
    """An unquoted member value: a literal, or words read as a string (``{"city": New York}``)."""
    end = _bare_end(cur, pos)
    run = cur.text[pos:end]
    comment = _BARE_COMMENT.search(run)
    if comment is not None:
        run = run[: comment.start()]
    elif end >= cur.end:
        cur.reach = cur.end
        raise ReadError(pos, "truncated", "the text ends inside an unquoted value")
    word = run.rstrip()
    after = pos + len(word)
    if after == end and cur.text.startswith('"', end) and may_close(cur, end + 1, False):
        # ``{"a": foo", "b": 1}``: the value lost its opening quote.
        cur.note("missing_opening_quote")
        cur.last_string = (end + 1, '"')
        return word, end + 1
    if word in LITERALS:
        value, fix = LITERALS[word]
        if fix:
            cur.note(fix)
        return value, after
    if word in NON_FINITE:
        raise ReadError(pos, "non_finite", f"{word} is not a JSON number")
    if _QUOTED_WORD.search(word) is not None:
        # ``True 'type' 'x'``: quoted words inside an unquoted value are not its text.
        raise ReadError(pos, "parse", "quotes inside an unquoted value")
    if _CODE_VALUE.match(word) is not None:
        # ``new NumberInt(5)``, ``ObjectId("..")``: code whose value is not in the text.
        raise ReadError(pos, "parse", f"code, not a value: {clip(word)!r}")
    cur.note("unquoted_value")
    if word in WORDLIKE_LITERALS and cur.choose(2) == 1:
        return WORDLIKE_LITERALS[word], after
    spelled = NOT_A_LITERAL if word in WORDLIKE_LITERALS else spelled_literal(word)
    if spelled is not NOT_A_LITERAL and cur.choose(2) == 1:
        cur.note("misspelled_literal")
        return spelled, after
    return word, after


def _bare_end(cur: Cursor, pos: int) -> int:
    """Where an unquoted value starting at ``pos`` ends: at a comma, a quote, a bracket that
    closes the member, or the end of its line. A bracketed group attached to a word is part
    of it (``words{in brackets}``), and the value goes on over lines that do not start a
    member or close the object."""
    text = cur.text
    cursor = pos
    while True:
        cursor = _BARE_RUN.match(text, cursor).end()  # type: ignore[union-attr]
        if cursor >= cur.end:
            return cursor
        char = text[cursor]
        if char in "{[" and not text[cursor - 1].isspace():
            group = _group_end(cur, cursor)
            if group is not None:
                cur.note("unquoted_value_brackets")
                cursor = group
                continue
        if char in "\n\r" and _continues_on_next_line(cur, cursor):
            cur.note("multiline_unquoted_value")
            cursor += 1
            continue
        return cursor


def _group_end(cur: Cursor, pos: int) -> int | None:
    """The offset past the bracket closing the one at ``pos`` on the same line, when the
    group holds no quote and its brackets pair up; else None."""
    stack: list[str] = []
    text = cur.text
    for cursor in range(pos, cur.end):
        char = text[cursor]
        if char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]":
            if stack.pop() != char:
                return None
            if not stack:
                return cursor + 1
        elif char in "\n\r" or char in QUOTES:
            return None
    return None


def _continues_on_next_line(cur: Cursor, newline: int) -> bool:
    """Whether the line after ``newline`` carries on an unquoted value: it starts with a
    word that is not a key (``word:``), a literal or a comment."""
    text = cur.text
    start = JSON_SPACE.match(text, newline).end()  # type: ignore[union-attr]
    if text.count("\n", newline, start) > 1 or start >= cur.end:
        return False  # a blank line ends the value
    word = KEY_WORD.match(text, start)
    if word is None or word.group() in LITERALS:
        return False
    after = INLINE_SPACE.match(text, word.end()).end()  # type: ignore[union-attr]
    return after >= cur.end or text[after] not in ":："
