"""Object keys and the colon after them.

A key is quoted, an unquoted word (``content-type``), a number (``{5: "x"}``) or Python's
``True``/``False``/``None`` (a choice: Python writes ``"true"``, JavaScript keeps the word); a key
may have lost its opening quote (``{a": 1}``). The colon may be full-width or doubled, or missing
between a quoted key and a value on its line (``{"a" 1}``).
"""

from __future__ import annotations

import re

from scriptorium.validate.json.tolerant.cursor import INLINE_SPACE, Cursor, ReadError
from scriptorium.validate.json.tolerant.literals import KEY_WORD, is_number_start
from scriptorium.validate.json.tolerant.quotes import QUOTES, bare_value_follows, key_quote
from scriptorium.validate.json.tolerant.strings import read_string

__all__ = ["KEY_NUMBER", "QUOTED_KEY", "colon", "key_follows", "key_starts", "read_key"]

# Numbers as keys, where Python and JavaScript spell the key alike (no exponent, no trailing zero).
KEY_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]*[1-9])?(?=[ \t]*[:：])")
QUOTED_KEY = re.compile(r"(?:\"[^\"\n]*\"|'[^'\n]*')[ \t]*[:：]")
# ... and one whose colon is missing before a value on its line.
_QUOTED_KEY_NO_COLON = re.compile(r"(?:\"[^\"\n]*\"|'[^'\n]*')[ \t]+[\"'{\[0-9-]")
_PYTHON_KEYS = {"True": "true", "False": "false", "None": "null"}


def key_follows(cur: Cursor, pos: int) -> bool:
    """Whether a key and its colon start at ``pos`` (``"b":``, ``b:``, ``"b" "v"``)."""
    if QUOTED_KEY.match(cur.text, pos) or _QUOTED_KEY_NO_COLON.match(cur.text, pos):
        return True
    word = KEY_WORD.match(cur.text, pos)
    if word is None:
        return False
    after = INLINE_SPACE.match(cur.text, word.end()).end()  # type: ignore[union-attr]
    return after < cur.end and cur.text[after] in ":："


def key_starts(cur: Cursor, pos: int) -> bool:
    text = cur.text
    return (
        text[pos] in QUOTES
        or KEY_WORD.match(text, pos) is not None
        or KEY_NUMBER.match(text, pos) is not None
    )


def read_key(cur: Cursor, pos: int) -> tuple[str, int]:
    text = cur.text
    char = text[pos]
    if char in QUOTES:
        return read_string(cur, pos, key=True)
    number = KEY_NUMBER.match(text, pos)
    if number is not None:
        # ``{5: "x"}``: Python's json.dumps and JavaScript both write the key as "5".
        cur.note("non_string_key")
        return number.group(), number.end()
    match = KEY_WORD.match(text, pos)
    if match is None:
        raise ReadError(pos, "parse", "expected an object key")
    if match.end() >= cur.end:
        raise ReadError(pos, "truncated", "the text ends inside an object key")
    word = match.group()
    if text.startswith('"', match.end()) and key_quote(cur, match.end() + 1):
        # ``{a": 1}``: the key lost its opening quote.
        cur.note("missing_opening_quote")
        return word, match.end() + 1
    cur.note("unquoted_key")
    if word in _PYTHON_KEYS:
        # Python's json.dumps writes {True: 1} as {"true": 1}; JavaScript keeps "True".
        return (_PYTHON_KEYS[word] if cur.choose(2) == 0 else word), match.end()
    return word, match.end()


def colon(cur: Cursor, key_at: int, after_key: int) -> int:
    """The offset past the colon after the key read from ``key_at`` to ``after_key`` (a
    full-width or doubled colon accepted). A quoted key followed on its line by a value has
    lost its colon (``{"a" 1}``): nothing else can stand between a key and a value."""
    pos = cur.expect_more(after_key)
    char = cur.text[pos]
    if char == "：":
        cur.note("fullwidth_punctuation")
    elif char != ":":
        if _colon_missing(cur, key_at, after_key, pos):
            cur.note("inserted_missing_colon")
            return pos
        raise ReadError(pos, "parse", "expected ':' after an object key")
    after = INLINE_SPACE.match(cur.text, pos + 1).end()  # type: ignore[union-attr]
    if after < cur.end and cur.text[after] in ":：":
        cur.note("doubled_colon")
        return after + 1
    return pos + 1


def _colon_missing(cur: Cursor, key_at: int, after_key: int, pos: int) -> bool:
    """Whether the key at ``key_at`` (quoted) is followed, on its line, by a value at ``pos``
    that is not a bare word (``{"a" 1}``, ``{"a" "b"}``, ``{"a" [1]}``)."""
    text = cur.text
    if text[key_at] not in QUOTES or not cur.inline(after_key, pos):
        return False
    char = text[pos]
    if char in QUOTES:
        return pos > after_key  # (``"a""b"`` is a doubled quote, not a key and a value)
    if after_key - key_at <= 2 and pos == after_key:
        return False  # ``""0""``: an empty key right before a value is a doubled quote
    return char in "{[" or is_number_start(cur, pos) or bare_value_follows(cur, pos)
