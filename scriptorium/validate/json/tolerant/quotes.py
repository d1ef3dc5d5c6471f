"""Where a quote stands: the kinds of quotes, and whether one may close or open a string.

The table of quote kinds says which characters close a string opened by which (straight, single,
smart, backtick, corner brackets; smart quotes paired loosely) and which fix each kind records.
The look-arounds judge a quote by its neighbours: what follows it (may it close a string, is a
value or a key's colon next), and what comes before it (a delimiter, comments and line breaks
skipped: may it open one). :mod:`.strings` makes its choices from these.
"""

from __future__ import annotations

import re

from scriptorium.validate.json.tolerant.cursor import INLINE_SPACE, Cursor, ReadError
from scriptorium.validate.json.tolerant.literals import IDENT, KEY_WORD, LITERALS

__all__ = [
    "CLOSERS",
    "MIXED_CLOSERS",
    "PLAIN_RUN",
    "QUOTES",
    "QUOTE_FIX",
    "after_plus",
    "bare_value_follows",
    "closing_shape",
    "continuation_fails",
    "delimiter_before",
    "key_quote",
    "may_close",
    "may_open",
    "no_delimiter_before",
    "opens_here",
    "plus_at",
    "value_follows",
]

# -- the kinds of quotes -----------------------------------------------------------------------

# A string opened by one of these closes at one of the paired characters. Smart quotes and corner
# brackets are paired loosely (either form closes) because models and keyboards mix them up.
CLOSERS = {
    '"': '"',
    "'": "'",
    "`": "`",
    "“": "”“",
    "”": "”“",
    "‘": "’‘",
    "’": "’‘",
    "「": "」「",
    "『": "』『",
}
# ... and may close at one of these instead: a smart quote closing a straight one, or the reverse.
MIXED_CLOSERS = {'"': "”“", "'": "’‘", "“": '"', "”": '"', "‘": "'", "’": "'"}
MIXED_CLOSERS.update({"`": "", "「": "", "『": ""})
QUOTE_FIX = {'"': None, "'": "single_quotes", "“": "smart_quotes", "”": "smart_quotes"}
QUOTE_FIX.update({"‘": "smart_quotes", "’": "smart_quotes", "`": "backtick_quotes"})
QUOTE_FIX.update({"「": "corner_brackets", "『": "corner_brackets"})
PLAIN_RUN = {
    opener: re.compile("[^" + re.escape(closers + MIXED_CLOSERS[opener]) + r"\\\x00-\x1f]*")
    for opener, closers in CLOSERS.items()
}
QUOTES = frozenset(CLOSERS)
# After a closing quote (value strings), one of these may follow; anything else means the quote
# was part of the text. Quotes and brackets are here because a comma may be missing before them.
_AFTER_VALUE = frozenset(",，}])\n\r{[#") | QUOTES
# A delimiter and a quote that opens a string after it (the reading runs on through them).
_OPENING_AFTER_DELIMITER = re.compile("[,，:：{\\[][ \\t]*[" + "".join(sorted(CLOSERS)) + "]")


# -- may a quote close a string (by what follows it) ------------------------------------------


def may_close(cur: Cursor, pos: int, key: bool) -> bool:
    """Whether a quote just before ``pos`` can be a closing delimiter, by what follows it."""
    pos = INLINE_SPACE.match(cur.text, pos).end()  # type: ignore[union-attr]
    if pos > cur.reach:
        cur.reach = pos
    if pos >= cur.end:
        return True
    char = cur.text[pos]
    if key:
        if char in "/#":  # ``'a' /* note */: 1``: a comment between a key and its colon
            try:
                pos = cur.skip_space(pos, note=False)
            except ReadError:
                return False
            return pos < cur.end and cur.text[pos] in ":："
        # A value on the key's line: the colon is missing (``{"a" 1}``, ``{"a" "b"}``).
        if char in ":：":
            return True
        spaced = cur.text[pos - 1] in " \t"  # ``"a""b"`` is no key before a value
        return (spaced and char in QUOTES) or bare_value_follows(cur, pos)
    if char == "/":
        return cur.text.startswith(("//", "/*"), pos)
    if char == "+":
        return plus_at(cur, pos) >= 0
    return char in _AFTER_VALUE


def value_follows(cur: Cursor, pos: int, key: bool) -> bool:
    """Whether a value or key starts at ``pos`` (after spaces) that a missing comma would
    separate from a string closing just before: a number, a literal, or ``word:``."""
    if key:
        return False
    text = cur.text
    pos = INLINE_SPACE.match(text, pos).end()  # type: ignore[union-attr]
    if pos >= cur.end:
        return False
    if text[pos] == "-" or "0" <= text[pos] <= "9":
        return True
    word = KEY_WORD.match(text, pos)
    if word is None:
        return False
    if word.group() in LITERALS:
        return True
    after = INLINE_SPACE.match(text, word.end()).end()  # type: ignore[union-attr]
    return after < cur.end and text[after] == ":"


def bare_value_follows(cur: Cursor, pos: int) -> bool:
    """Whether a number, bracket or literal comes next (after spaces): after a key, that is
    a missing colon, not text after a quote inside the key."""
    pos = INLINE_SPACE.match(cur.text, pos).end()  # type: ignore[union-attr]
    if pos >= cur.end:
        return False
    char = cur.text[pos]
    if char in "{[-" or "0" <= char <= "9":
        return True
    word = IDENT.match(cur.text, pos)
    return word is not None and word.group() in LITERALS


def key_quote(cur: Cursor, pos: int) -> bool:
    """Whether a colon follows ``pos`` (after spaces): a quote before it closes a key."""
    after = INLINE_SPACE.match(cur.text, pos).end()  # type: ignore[union-attr]
    return after < cur.end and cur.text[after] in ":："


def plus_at(cur: Cursor, pos: int) -> int:
    """The offset of a ``+`` after ``pos`` (space, line breaks and comments skipped) when
    a quote follows it the same way; else -1."""
    try:
        plus = cur.skip_space(pos, note=False)
        if plus >= cur.end or cur.text[plus] != "+":
            return -1
        start = cur.skip_space(plus + 1, note=False)
    except ReadError:
        return -1
    return plus if start < cur.end and cur.text[start] in QUOTES else -1


def closing_shape(cur: Cursor, pos: int) -> bool:
    """Whether the quote at ``pos`` sits like a closing quote: right after the text, before a
    space (``"red" green"``; in ``"she said "hi"`` the first inner quote opens a
    quotation, and in ``"don"t"`` the quote is inside a word)."""
    text = cur.text
    return not text[pos - 1].isspace() and pos + 1 < cur.end and text[pos + 1] in " \t"


def continuation_fails(
    cur: Cursor, plain: re.Pattern[str], closers: str, pos: int, key: bool, unescaped: bool
) -> bool:
    """Whether reading on past a quote that could close the string is sure to fail, so the
    choice need not be explored: the text ends, the line ends (once a quote is unescaped),
    or the next quote sits where a string would start (``"x "y", "n": 1``)."""
    stop = plain.match(cur.text, pos).end()  # type: ignore[union-attr]
    if stop >= cur.end:
        return True
    if _OPENING_AFTER_DELIMITER.search(cur.text, pos, stop) is not None:
        # ``"a "b" c", 'd'``: a quote of another kind right after a delimiter opens a string;
        # a string holding quotes in doubt does not run on through it.
        return True
    char = cur.text[stop]
    if char in "\n\r":
        return unescaped
    if char in closers and may_open(cur, stop):
        return not may_close(cur, stop + 1, key)
    return False


# Before an opening quote (or a quote that is a delimiter), one of these comes.
# -- may a quote open a string (by what comes before it) ---------------------------------------

_BEFORE_OPENING = frozenset(",，:：{[")
# ... or where a string, a container or the line's end may come after it.
_DELIMITER_OPENS = re.compile(
    "[,，:：{\\[][ \\t\\n\\r]*(?:[{\\["
    + "".join(sorted(CLOSERS))
    + "]|$)|[:：][ \\t]|^[ \\t]*[,，:：]"
)
# How far back a comment before a quote is looked for (keeps each look bounded).
_LOOK_BACK = 200
_LINE_COMMENT = re.compile(r"(?:(?<=\s)|(?<=[,，:：{\[]))(?://|#)")


def delimiter_before(cur: Cursor, pos: int) -> int:
    """The offset of the delimiter (``,`` ``:`` ``{`` ``[``) before ``pos``, spaces, line
    breaks and comments skipped; -1 when something else comes first."""
    back = pos - 1
    text = cur.text
    while True:
        while back >= 0 and text[back] in " \t\n\r":
            back -= 1
        if back < 1 or not text.startswith("*/", back - 1):
            break
        opened = text.rfind("/*", max(back - _LOOK_BACK, 0), back - 1)  # look before it
        if opened < 0:
            break
        back = opened - 1
    if back >= 0 and text[back] not in _BEFORE_OPENING and text[back + 1 : pos].count("\n"):
        # ``,  // note`` ending the line before: look before the comment.
        line = max(text.rfind("\n", 0, back + 1) + 1, back - _LOOK_BACK)
        comment = _LINE_COMMENT.search(text, line, back + 1)
        if comment is not None:
            back = comment.start() - 1
            while back >= 0 and text[back] in " \t":
                back -= 1
    return back if back >= 0 and text[back] in _BEFORE_OPENING else -1


def may_open(cur: Cursor, pos: int) -> bool:
    """Whether the quote at ``pos`` sits where a string would start (after ``,``, ``:``...,
    spaces, line breaks and comments skipped)."""
    return delimiter_before(cur, pos) >= 0


def opens_here(cur: Cursor, pos: int) -> bool:
    """Whether the quote at ``pos`` reads as the opening of a string: right after a
    delimiter, and before text (a quote before ``}``, ``,`` or the line end closes)."""
    if not may_open(cur, pos):
        return False
    after = INLINE_SPACE.match(cur.text, pos + 1).end()  # type: ignore[union-attr]
    return after < cur.end and cur.text[after] not in ",，}])\n\r"


def no_delimiter_before(cur: Cursor, start: int, pos: int) -> bool:
    """Whether the string opened at ``start`` holds text, and no delimiter, before the one
    that comes before the quote at ``pos`` (else its closing quote may be missing before
    either; an empty string missing a quote is a lone quote, not a reading)."""
    back = delimiter_before(cur, pos)
    content = cur.text[start + 1 : back]
    # A delimiter inside counts where a string could start after it (``"a, "b`` holds one;
    # ``"https://x`` and ``"b,c`` do not).
    return bool(content) and _DELIMITER_OPENS.search(content) is None


def after_plus(cur: Cursor, pos: int, start: int) -> bool:
    """Whether a ``+`` or a comment comes right before the quote at ``pos`` (spaces skipped)
    inside the string opened at ``start``: the quote opens a string, as in ``"abc + "def"``
    or ``"abc/* note */"def"``, so this one lost its closing quote."""
    back = pos - 1
    text = cur.text
    while back > start and text[back] in " \t":
        back -= 1
    if text.startswith("*/", back - 1):
        opened = text.rfind("/*", start + 1, back - 1)
        if opened >= 0:
            back = opened - 1
            while back > start and text[back] in " \t":
                back -= 1
            # ``"abc/* c */"def"`` or ``"abc + /* c */"def"``; after a delimiter
            # (``"abc, /* c */"def"``) the quote is missing before that delimiter.
            return text[back] not in _BEFORE_OPENING
    return back > start and text[back] == "+"
