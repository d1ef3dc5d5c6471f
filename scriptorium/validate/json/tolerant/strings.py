"""Quoted strings: reading one, and the joins between them.

:func:`read_string` reads a string and decides, at each quote that could close it, whether it
closes or is part of the text (a choice where both readings hold; see the package's overview). It
also reads strings opened by doubled quotes, strings whose closing quote is missing before a
delimiter, an array item whose opening quote is missing, Python's triple-quoted, prefixed and raw
strings, and refuses JavaScript templates with placeholders. :func:`joined` reads strings joined
to a string value: ``"a" + "b"``, and Python's adjacent strings ``'a' 'b'``.
"""

from __future__ import annotations

import re
from typing import Any

from scriptorium.validate.json.tolerant.cursor import CLOSING, INLINE_SPACE, Cursor, ReadError
from scriptorium.validate.json.tolerant.escapes import (
    backslashes_are_text,
    escape_meant,
    read_escape,
)
from scriptorium.validate.json.tolerant.quotes import (
    CLOSERS,
    MIXED_CLOSERS,
    PLAIN_RUN,
    QUOTE_FIX,
    QUOTES,
    after_plus,
    bare_value_follows,
    closing_shape,
    continuation_fails,
    delimiter_before,
    key_quote,
    may_close,
    may_open,
    no_delimiter_before,
    opens_here,
    plus_at,
    value_follows,
)

__all__ = [
    "PYTHON_PREFIX",
    "concatenate",
    "joined",
    "missing_open_item",
    "python_adjacent",
    "read_prefixed",
    "read_string",
]

# A comment starting inside a string's text (``# `` and a space: ``#5`` is text).
_TEXT_COMMENT = re.compile(r"(?:(?<=\s)|(?<=[\"'“”‘’]))(?://|/\*|#\s)")


def read_string(
    cur: Cursor, pos: int, *, key: bool = False, inner_quotes: bool = True, item: bool = False
) -> tuple[str, int]:
    """The string whose opening quote is at ``pos`` and the offset past its closing quote.

    A quote of the string's own kind that cannot be a delimiter (letters on both sides, as in
    ``"she said "hi" twice"``) is part of the text. Once a string holds such a quote, each
    later quote that could close it is a choice: it closes, or it is part of the text. With
    ``inner_quotes`` false (a string that is the whole value) such a quote is an error.
    ``item`` says the string is an array item (a quote in it may close it before an item
    whose opening quote is missing).
    """
    text, end = cur.text, cur.end
    opener = text[pos]
    if opener in "\"'" and text.startswith(opener * 3, pos):
        return _read_triple(cur, pos)
    closers, mixed = CLOSERS[opener], MIXED_CLOSERS[opener]
    fix = QUOTE_FIX[opener]
    if fix:
        cur.note(fix)
    plain = PLAIN_RUN[opener]
    parts: list[str] = []
    start = pos
    doubled = _doubled_opener(cur, pos, key)
    pos += 2 if doubled else 1
    unescaped = False  # the string holds a quote of its own kind that is not a delimiter
    passed = False  # a quote that could have closed the string was read as text
    literal: bool | None = None  # its backslashes are text (decided at the first one)
    line_start = pos  # where the string's current line starts
    while True:
        run_end = plain.match(text, pos).end()  # type: ignore[union-attr]
        parts.append(text[pos:run_end])
        pos = run_end
        if pos >= end:
            cur.reach = end
            raise ReadError(start, "truncated", "unterminated string")
        char = text[pos]
        if char in closers or char in mixed:
            own = char in closers
            if not own and (unescaped or passed) and opens_here(cur, pos):
                # Once a quote that could close the string was text, a quote of any kind
                # right after a delimiter (``"a "b" c"},“d”``) starts a string: the reading
                # that runs on through the delimiter is a misreading.
                raise ReadError(pos, "parse", "a quote where a new string would start")
            if own and after_plus(cur, pos, start) and not may_close(cur, pos + 1, key):
                # ``"abc + "def"``: a join whose first string lost its closing quote, with
                # or without the space; not a quote inside the text.
                raise ReadError(pos, "parse", "a quote after '+' inside a string")
            if (
                own
                and not (unescaped or passed)
                and inner_quotes
                and opens_here(cur, pos)
                and no_delimiter_before(cur, start, pos)
                and (not may_close(cur, pos + 1, key) or cur.choose(2) == 1)
            ):
                # A quote right after a delimiter opens the next string: this one's closing
                # quote is missing before the delimiter (when the quote cannot close this
                # string, that is the only reading left).
                return _closed_before_delimiter(cur, parts, pos, opener, start)
            if doubled and own and text.startswith(char * 2, pos):
                if may_close(cur, pos + 2, key):
                    return _finish(cur, parts, opener, pos + 2)
                parts.append(char)  # a doubled quote inside: one quote character
                pos += 2
                continue
            if may_close(cur, pos + 1, key) and not (own and unescaped and opens_here(cur, pos)):
                # (Once the string holds an unescaped quote, a quote right after a delimiter
                # opens the next string: it does not close this one.)
                # Quotes side by side (``"5"" wide"``) may be a quote ending the text, then
                # the closing one; other quotes close as in JSON until one proved unescaped.
                twin = pos + 1 < end and text[pos + 1] == char
                if own and ((not unescaped and not twin) or not inner_quotes):
                    return _finish(cur, parts, opener, pos + 1)
                if own and opens_here(cur, pos):
                    # Right after a delimiter, before more text, a quote is a delimiter: it
                    # closes, or (above) opens the next string; it is not text.
                    return _finish(cur, parts, opener, pos + 1)
                if continuation_fails(cur, plain, closers, pos + 1, key, unescaped or own):
                    if not own:
                        cur.note("mixed_quotes")
                    return _finish(cur, parts, opener, pos + 1)
                if cur.choose(2) == 0:
                    if not own:
                        cur.note("mixed_quotes")
                    return _finish(cur, parts, opener, pos + 1)
                passed = True
                after = INLINE_SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
                if after < end and text[after] in CLOSING:
                    cur.swallowed += text[after]
                if own and parts[-2:] == ["\\", ""] and cur.choose(2) == 1:
                    parts[-2] = ""  # ``\\"`` as a quote escaped twice
                    cur.note("double_escaped_quote")
                elif own:
                    cur.note("escaped_inner_quote")
                    unescaped = True
            elif own:
                flags = (key, inner_quotes, item, unescaped)
                closed = _inner_quote(cur, parts, pos, opener, flags)
                if closed:
                    return _finish(cur, parts, opener, pos + 1)
                unescaped = unescaped or closed is False
            parts.append(char)
            pos += 1
        elif char == "\\":
            if literal is None:
                literal = backslashes_are_text(cur, pos, closers + mixed)
            if literal:
                if escape_meant(text, pos):
                    raise ReadError(pos, "parse", "a string whose backslashes read two ways")
                parts.append(char)  # ``"C:\Users\x"``: no escape was meant
                pos += 1
                continue
            decoded, pos = read_escape(cur, pos, single=opener in "'`")
            parts.append(decoded)
        else:
            if key and char in "\n\r":
                raise ReadError(pos, "parse", "an object key holding a line break")
            if unescaped and char in "\n\r":
                # With quotes already in doubt, a string running on past the line end is
                # a misreading, not a multi-line value.
                raise ReadError(pos, "parse", "a string with an unescaped quote spans lines")
            if char in "\n\r":
                if _TEXT_COMMENT.search(text, line_start, pos) is not None:
                    # ``"abc // note`` then a line break: the closing quote is missing
                    # before the comment or at the line end, not somewhere further on.
                    raise ReadError(pos, "parse", "a comment in a string that spans lines")
                line_start = pos + 1
            # A raw newline or tab inside a string: the model meant that character.
            cur.note("escaped_control_char")
            parts.append(char)
            pos += 1


def _inner_quote(
    cur: Cursor, parts: list[str], pos: int, opener: str, flags: tuple[bool, bool, bool, bool]
) -> bool | None:
    """A quote of the string's own kind that cannot close it by what follows: True when this
    reading closes the string there anyway, False when the quote is text, None when it is an
    escaped quote after all (an over-escaped one: its backslash is dropped from ``parts``).
    ``flags`` are the string's: key, inner quotes allowed, array item, holds an unescaped
    quote already."""
    key, inner_quotes, item, unescaped = flags
    if not inner_quotes:
        raise ReadError(pos, "parse", "unexpected text after a string")
    if may_open(cur, pos):
        raise ReadError(pos, "parse", "a quote where a new string would start")
    if key and bare_value_follows(cur, pos + 1):
        raise ReadError(pos + 1, "parse", "expected ':' after an object key")
    if not key and key_quote(cur, pos + 1):
        raise ReadError(pos, "parse", "a quote before ':' inside a value (a key's quote?)")
    if value_follows(cur, pos + 1, key) and cur.choose(2) == 1:
        # ``["" null]``: the quote may close the string before a missing comma.
        return True
    if item and not unescaped and closing_shape(cur, pos) and cur.choose(2) == 1:
        # ``["a" b", "c"]``: the quote may close "a" before an item whose opening quote is
        # missing, as much as it may be a stray quote inside "a\" b".
        cur.open_quote = opener
        return True
    if parts[-2:] == ["\\", ""] and cur.choose(2) == 1:
        # ``\\"``: an escaped backslash before a quote, or a quote escaped twice.
        parts[-2] = ""
        cur.note("double_escaped_quote")
        return None
    cur.note("escaped_inner_quote")
    return False


def _closed_before_delimiter(
    cur: Cursor, parts: list[str], pos: int, opener: str, start: int
) -> tuple[str, int]:
    """A quote that opens a new string right after a delimiter (``"New York, "gender": ...``)
    while the string before it never closed: its closing quote is missing before the
    delimiter, where the reading goes on. (Read as text, the quote would need the string to
    hold an unescaped quote after a delimiter, which is refused.) Not offered once the
    reading took a quote that could close the string for text: then it was not missing."""
    back = delimiter_before(cur, pos)
    value = "".join(parts)
    if _TEXT_COMMENT.search(cur.text, start + 1, back + 1) is not None:
        # ``"abc // note\n, "b"``: the quote is missing before the comment, or at the line end.
        raise ReadError(back, "parse", "a comment in a string whose closing quote is missing")
    cur.note("missing_closing_quote")
    return _finish(cur, [value[: len(value) - (pos - back)]], opener, back)


def _finish(cur: Cursor, parts: list[str], opener: str, end: int) -> tuple[str, int]:
    value = "".join(parts)
    if opener == "`" and "${" in value:
        raise ReadError(end, "parse", "a JavaScript template with a placeholder")
    cur.last_string = (end, opener)
    return value, end


def _doubled_opener(cur: Cursor, pos: int, key: bool) -> bool:
    """Whether the string at ``pos`` opens with doubled quotes read as one delimiter.

    ``""key""`` is quotes inside the key, or a text whose quotes were all doubled (the
    escaping of CSV): decided once for the text, the first time such an opener is met.
    """
    text = cur.text
    opener = text[pos]
    if opener not in "\"'" or not text.startswith(opener * 2, pos):
        return False
    if may_close(cur, pos + 2, key):
        return False  # an empty string
    if cur.doubled is None:
        cur.doubled = cur.choose(2) == 1
    if cur.doubled:
        cur.note("doubled_quotes")
    return cur.doubled


def missing_open_item(cur: Cursor, pos: int) -> str:
    """The item after a string closed early: its text up to a quote that can close it, on
    the same line (``green"`` in ``["red" green", "blue"]``), escapes read as in a
    string."""
    opener = cur.open_quote
    assert opener is not None
    cur.open_quote = None
    closers = CLOSERS[opener] + MIXED_CLOSERS[opener]
    text = cur.text
    parts: list[str] = []
    cursor = pos
    while cursor < cur.end and text[cursor] not in closers:
        char = text[cursor]
        if char in "\n\r":
            raise ReadError(cursor, "parse", "no item whose opening quote is missing")
        if char == "\\":
            decoded, cursor = read_escape(cur, cursor, single=opener != '"')
            parts.append(decoded)
            continue
        parts.append(char)
        cursor += 1
    closed = cursor < cur.end and may_close(cur, cursor + 1, False)
    if not closed or cursor == pos:
        raise ReadError(pos, "parse", "no item whose opening quote is missing")
    cur.note("inserted_missing_comma")
    cur.note("missing_opening_quote")
    cur.last_string = (cursor + 1, opener)
    return "".join(parts)


# The body of a triple-quoted string: escapes, and quotes fewer than three in a row.
_TRIPLE_BODY = {q: re.compile(rf"(?:[^{q}\\]|\\[\s\S]|{q}(?!{q}{q}))*") for q in ('"', "'")}


def _read_triple(cur: Cursor, pos: int) -> tuple[str, int]:
    """A Python triple-quoted string: raw newlines and lone quotes allowed, Python's escapes."""
    quote = cur.text[pos]
    cur.note("triple_quotes")
    body = _TRIPLE_BODY[quote].match(cur.text, pos + 3).end()  # type: ignore[union-attr]
    cur.reach = max(cur.reach, body + 3)
    if not cur.text.startswith(quote * 3, body):
        raise ReadError(pos, "truncated", "unterminated triple-quoted string")
    parts: list[str] = []
    cursor = pos + 3
    while cursor < body:
        slash = cur.text.find("\\", cursor, body)
        if slash < 0:
            parts.append(cur.text[cursor:body])
            break
        parts.append(cur.text[cursor:slash])
        if cur.text.startswith("\\\n", slash):
            cursor = slash + 2  # a line continuation
            continue
        decoded, cursor = read_escape(cur, slash, single=True)
        parts.append(decoded)
    cur.last_string = (body + 3, quote)
    return "".join(parts), body + 3


# A Python string prefix before a quote: ``u''`` is text, ``r''`` raw, bytes and f-strings refused.
PYTHON_PREFIX = re.compile(r"([rRuUbBfF]{1,2})(?=['\"])")


def read_prefixed(cur: Cursor, pos: int, prefix: re.Match[str]) -> tuple[str, int]:
    """A Python string literal with a prefix, read as Python reads it: ``u'..'`` is the
    string, ``r'..'`` keeps its backslashes; bytes and f-strings are not text."""
    letters = prefix.group(1).lower()
    quote_at = prefix.end()
    if letters == "u":
        cur.note("python_string_prefix")
        return read_string(cur, quote_at)
    if letters != "r":
        kind = "a bytes literal" if "b" in letters else "an f-string" if "f" in letters else ""
        message = f"{kind or 'a string prefix Python refuses'} ({prefix.group(1)}'...')"
        raise ReadError(pos, "parse", f"{message} is not JSON text")
    cur.note("python_string_prefix")
    text = cur.text
    quote = text[quote_at]
    if text.startswith(quote * 3, quote_at):
        raise ReadError(pos, "parse", "a raw triple-quoted string")
    cursor = quote_at + 1
    while cursor < cur.end and text[cursor] != quote:
        if text[cursor] in "\n\r":
            raise ReadError(cursor, "parse", "a raw string spanning lines")
        cursor += 2 if text[cursor] == "\\" else 1
    if cursor >= cur.end:
        cur.reach = cur.end
        raise ReadError(pos, "truncated", "unterminated raw string")
    if not may_close(cur, cursor + 1, False):
        raise ReadError(cursor, "parse", "unexpected text after a raw string")
    cur.last_string = (cursor + 1, quote)
    return text[quote_at + 1 : cursor], cursor + 1


def joined(cur: Cursor, value: Any, pos: int, *, member: bool) -> tuple[Any, int]:
    """A string value and the strings joined to it: ``"x" + "y"`` (one string to Python and
    JavaScript alike), and in an object ``'x' 'y'`` (Python's implicit concatenation; in
    an array that is a choice, see :func:`python_adjacent`)."""
    text = cur.text
    while isinstance(value, str) and cur.last_string[0] == pos:
        after = INLINE_SPACE.match(text, pos).end()  # type: ignore[union-attr]
        plus = plus_at(cur, pos)
        if plus >= 0:
            start = cur.skip_space(plus + 1)  # ``"a" +\n "b"``, ``"a" + /* c */ "b"``
            if start < cur.end and text[start] in QUOTES:
                more, pos = read_string(cur, start)
                value += more
                cur.note("joined_strings")
                continue
            return value, pos
        if member and python_adjacent(cur, pos, after) and cur.choose(2) == 1:
            value, pos = concatenate(cur, value, after)
            continue
        return value, pos
    return value, pos


def python_adjacent(cur: Cursor, after_value: int, pos: int) -> bool:
    """Whether the string just read and the one at ``pos`` stand side by side on one line,
    one of them in single quotes: Python reads them as one string."""
    text = cur.text
    last_end, last_opener = cur.last_string
    return (
        last_end == after_value
        and pos < cur.end
        and text[pos] in QUOTES
        and cur.inline(after_value, pos)
        and "'" in (last_opener, text[pos])
    )


def concatenate(cur: Cursor, value: Any, pos: int) -> tuple[str, int]:
    more, end = read_string(cur, pos)
    cur.note("joined_strings")
    return str(value) + more, end
