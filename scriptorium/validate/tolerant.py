"""A tolerant JSON reader: the grammar behind the lenient parser.

It reads one JSON value and accepts, besides strict JSON, the slips language models make. Each slip it
accepts is recorded in ``fixes`` under a stable name (``internal_docs/validation.md`` lists them).

Where a slip can be read two ways, the reader does not guess: it asks :meth:`Reader._choose`, which
follows the ``choices`` it was given and records in ``points`` how many alternatives each spot had.
:mod:`scriptorium.validate.readings` runs the reader once per combination, so every plausible
reading of a text is known and the lenient parser can apply its rule (one value, or the one the
schema accepts). The spots that branch:

- a quote that may close a string or be part of it: once the string has shown an unescaped quote
  (``"a "b", "c"]``), when two quotes stand side by side (``"5"" wide"``), when a number, literal
  or ``word:`` follows (``["" null]``: a comma may be missing), and a smart quote that may close a
  straight-quoted string;
- a closing bracket of the wrong kind: it replaces the expected one (``[1, 2}``), or the expected
  one is missing before it (``{"a": [1, 2}``);
- two numbers separated by spaces on one line (``[1 2]``: two items, or ``[12]``), only when a
  schema is there to tell (``guided``); without one the reader refuses with ``ambiguous``;
- ``True``/``False``/``None`` as unquoted keys (Python spells them ``"true"``, JavaScript keeps the
  word), and unquoted words like ``yes`` or ``NULL`` (a literal, or the word as a string).

It refuses, on purpose: doubled commas and leading commas in arrays (JavaScript reads a hole),
numbers outside JSON's grammar (``007``, ``.5``, ``0x1f``), non-finite numbers, unknown escapes
(``"\\d"``), lone surrogates, and anything cut off at the end of the text. Nesting deeper than
``max_depth`` is refused, so recursion stays bounded; every reading moves forward only, so one
reading costs time linear in what it reads.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MAX_CHOICE_POINTS", "MAX_DEPTH", "QUOTES", "ReadError", "Reader"]

#: Containers nested deeper than this are refused.
MAX_DEPTH = 64
#: A reading with more spots that could be read two ways than this is refused as ambiguous.
MAX_CHOICE_POINTS = 16

_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_INLINE_SPACE = re.compile(r"[ \t]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
# Unquoted keys: a word of letters, digits, ``_``, ``$`` and inner hyphens (``content-type``).
_KEY_WORD = re.compile(r"(?:[^\W\d]|\$)(?:[\w$]|-(?=[\w$]))*")
# An unquoted string value runs to a comma, a bracket, a quote or the end of the line; a colon
# inside it is fine unless a space or quote follows (``a: b`` looks like a member, ``http://`` not).
_BARE_RUN = re.compile(r"(?:[^,:{}\[\]\"“”\n\r]|:(?![\s\"]))*")
_BARE_COMMENT = re.compile(r"\s(?://|/\*|#)")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS: dict[str, tuple[Any, str | None]] = {
    "true": (True, None),
    "false": (False, None),
    "null": (None, None),
    "True": (True, "python_literal"),
    "False": (False, "python_literal"),
    "None": (None, "python_literal"),
}
_NON_FINITE = frozenset({"NaN", "Infinity", "inf", "nan", "-Infinity", "-inf"})
# Unquoted words that a reader may take for a literal (YAML, other languages) or for the word.
_WORDLIKE_LITERALS: dict[str, Any] = {
    **dict.fromkeys(("yes", "Yes", "YES", "on", "On", "ON", "TRUE"), True),
    **dict.fromkeys(("no", "No", "NO", "off", "Off", "OFF", "FALSE"), False),
    **dict.fromkeys(("NULL", "Null", "nil", "Nil", "NIL", "none", "undefined"), None),
}
_PYTHON_KEYS = {"True": "true", "False": "false", "None": "null"}

# A string opened by one of these closes at one of the paired characters. Smart quotes are paired
# loosely (either curly form closes) because models and keyboards mix them up.
_CLOSERS = {'"': '"', "'": "'", "“": "”“", "”": "”“", "‘": "’‘", "’": "’‘"}
# ... and may close at one of these instead: a smart quote closing a straight one, or the reverse.
_MIXED_CLOSERS = {'"': "”“", "'": "’‘", "“": '"', "”": '"', "‘": "'", "’": "'"}
_QUOTE_FIX = {'"': None, "'": "single_quotes", "“": "smart_quotes", "”": "smart_quotes"}
_QUOTE_FIX.update({"‘": "smart_quotes", "’": "smart_quotes"})
_PLAIN_RUN = {
    opener: re.compile("[^" + re.escape(closers + _MIXED_CLOSERS[opener]) + r"\\\x00-\x1f]*")
    for opener, closers in _CLOSERS.items()
}
_TRIPLE_BODY = {q: re.compile(rf"(?:[^{q}\\]|\\[\s\S]|{q}(?!{q}{q}))*") for q in ('"', "'")}
QUOTES = frozenset(_CLOSERS)
# After a closing quote (value strings), one of these may follow; anything else means the quote
# was part of the text. Quotes and brackets are here because a comma may be missing before them.
_AFTER_VALUE = frozenset(",}]\n\r{[#") | QUOTES
# Before an opening quote (or a quote that is a delimiter), one of these comes.
_BEFORE_OPENING = frozenset(",:{[")


class ReadError(Exception):
    """Why the reader stopped: the offset, a stable issue keyword and a message for people.

    ``keyword`` is ``"parse"``, ``"truncated"`` (the text ended inside a value), ``"depth"``,
    ``"non_finite"`` or ``"ambiguous"`` (two readings, and no schema to tell them apart).
    """

    def __init__(self, pos: int, keyword: str, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.keyword = keyword
        self.message = message


class Reader:
    """Reads tolerant JSON values out of one text, one reading per instance.

    ``choices`` picks the alternative at each spot that can be read two ways (0 when not given);
    ``guided`` says a schema will choose among the readings, which opens readings only a schema
    can settle (``[1 2]`` as ``[12]``, a whole text that is a string with quotes inside);
    ``points`` lists, per spot met, how many alternatives it had; ``fixes`` lists the slips
    accepted; ``reach`` is the furthest offset looked at (the reading's cost).
    """

    def __init__(
        self,
        text: str,
        *,
        max_depth: int = MAX_DEPTH,
        choices: tuple[int, ...] = (),
        guided: bool = False,
    ) -> None:
        self.text = text
        self.end = len(text)
        self.max_depth = max_depth
        self.choices = choices
        self.guided = guided
        self.points: list[int] = []
        self.fixes: list[str] = []
        self.reach = 0

    # -- entry points ---------------------------------------------------------------------------

    def read_document(self) -> Any:
        """The one value the whole text holds (space and comments around it allowed)."""
        value, pos = self.read_value(0)
        pos = self.skip_space(pos)
        if pos < self.end:
            raise ReadError(pos, "parse", "unexpected text after the value")
        return value

    def read_value(self, pos: int, depth: int = 0) -> tuple[Any, int]:
        """The value starting at ``pos`` (after space) and the offset just past it."""
        pos = self.skip_space(pos)
        if pos >= self.end:
            raise ReadError(pos, "truncated", "the text ends where a value should start")
        char = self.text[pos]
        if char == "{":
            return self._read_object(pos, depth + 1)
        if char == "[":
            return self._read_array(pos, depth + 1)
        if char in QUOTES:
            # A whole text that is one string with quotes inside reads as prose just as well:
            # only a schema (which asks for a string) makes the string reading worth trying.
            return self.read_string(pos, inner_quotes=depth > 0 or self.guided)
        if char == "-" or "0" <= char <= "9":
            return self._read_number(pos)
        match = _IDENT.match(self.text, pos)
        if match is None:
            raise ReadError(pos, "parse", f"unexpected character {char!r}")
        word = match.group()
        if word in _LITERALS:
            value, fix = _LITERALS[word]
            if fix:
                self._note(fix)
            return value, match.end()
        if word in _NON_FINITE:
            raise ReadError(pos, "non_finite", f"{word} is not a JSON number")
        if match.end() >= self.end:
            raise ReadError(pos, "truncated", "the text ends inside a bare word")
        raise ReadError(pos, "parse", f"unexpected bare word {_clip(word)!r}")

    def first_item_looks_like_json(self, pos: int, opener: str) -> bool:
        """Whether what follows the bracket at ``pos - 1`` reads like JSON rather than prose.

        A string, number, bracket or literal does; so does ``word:`` after ``{``. A bare word or
        a stray character (``[see below]``, ``[...]``) does not.
        """
        try:
            pos = self.skip_space(pos)
        except ReadError:
            return True
        if pos >= self.end:
            return False
        char = self.text[pos]
        if char in QUOTES or char in "{[" or "0" <= char <= "9":
            return True
        if char == "-":
            return self.text.startswith(
                ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "I"), pos + 1
            )
        match = _IDENT.match(self.text, pos)
        if match is None:
            return False
        if opener == "[":
            return match.group() in _LITERALS or match.group() in _NON_FINITE
        try:
            after = self.skip_space(match.end())
        except ReadError:
            return True
        return after < self.end and self.text[after] == ":"

    def skip_space(self, pos: int) -> int:
        """The offset of the next token: JSON space, other Unicode space and comments skipped."""
        text, end = self.text, self.end
        while True:
            pos = _JSON_SPACE.match(text, pos).end()  # type: ignore[union-attr]
            if pos >= end:
                break
            char = text[pos]
            if (char == "/" and text.startswith("//", pos)) or char == "#":
                newline = text.find("\n", pos)
                pos = end if newline < 0 else newline
                self._note("removed_comment")
            elif char == "/" and text.startswith("/*", pos):
                close = text.find("*/", pos + 2)
                if close < 0:
                    self.reach = end
                    raise ReadError(pos, "truncated", "unterminated /* comment")
                pos = close + 2
                self._note("removed_comment")
            elif char.isspace():
                pos += 1
                self._note("nonstandard_whitespace")
            else:
                break
        if pos > self.reach:
            self.reach = pos
        return pos

    # -- containers -----------------------------------------------------------------------------

    def _read_object(self, pos: int, depth: int) -> tuple[dict[str, Any], int]:
        self._check_depth(pos, depth)
        result: dict[str, Any] = {}
        pos = self._expect_more(pos + 1)
        if self.text[pos] == ",":
            # ``{, "a": 1}``: an object has no holes, so a leading comma can only be a slip.
            self._note("removed_leading_comma")
            pos = self._expect_more(pos + 1)
        while True:
            char = self.text[pos]
            if char == "}":
                return result, pos + 1
            if char == "]":
                return result, self._wrong_closer(pos)
            key, pos = self._read_key(pos)
            pos = self._expect_more(pos)
            if self.text[pos] != ":":
                raise ReadError(pos, "parse", "expected ':' after an object key")
            value, pos = self._read_member_value(pos + 1, depth)
            result[key] = value  # a repeated key keeps its last value, as json.loads does
            pos = self._expect_more(pos)
            char = self.text[pos]
            if char == "}":
                return result, pos + 1
            if char == "]":
                return result, self._wrong_closer(pos)
            if char == ",":
                pos = self._expect_more(pos + 1)
                char = self.text[pos]
                if char in "}]":
                    self._note("removed_trailing_comma")
                    return result, pos + 1 if char == "}" else self._wrong_closer(pos)
                if char == ",":
                    raise ReadError(pos, "parse", "two commas in a row")
                continue
            if char in QUOTES or _KEY_WORD.match(self.text, pos):
                # The next member's key: only a comma can be missing here (the ':' after the
                # key confirms it, or the reading fails).
                self._note("inserted_missing_comma")
                continue
            raise ReadError(pos, "parse", "expected ',' or '}' after an object member")

    def _read_key(self, pos: int) -> tuple[str, int]:
        char = self.text[pos]
        if char in QUOTES:
            return self.read_string(pos, key=True)
        match = _KEY_WORD.match(self.text, pos)
        if match is None:
            raise ReadError(pos, "parse", "expected an object key")
        if match.end() >= self.end:
            raise ReadError(pos, "truncated", "the text ends inside an object key")
        word = match.group()
        self._note("unquoted_key")
        if word in _PYTHON_KEYS:
            # Python's json.dumps writes {True: 1} as {"true": 1}; JavaScript keeps "True".
            return (_PYTHON_KEYS[word] if self._choose(2) == 0 else word), match.end()
        return word, match.end()

    def _read_member_value(self, pos: int, depth: int) -> tuple[Any, int]:
        pos = self.skip_space(pos)
        if pos < self.end and (self.text[pos].isalpha() or self.text[pos] == "_"):
            return self._read_bare(pos)
        return self.read_value(pos, depth)

    def _read_bare(self, pos: int) -> tuple[Any, int]:
        """An unquoted member value: a literal, or words read as a string (``{"city": New York}``)."""
        run = _BARE_RUN.match(self.text, pos).group()  # type: ignore[union-attr]
        comment = _BARE_COMMENT.search(run)
        if comment is not None:
            run = run[: comment.start()]
        elif pos + len(run) >= self.end:
            self.reach = self.end
            raise ReadError(pos, "truncated", "the text ends inside an unquoted value")
        word = run.rstrip()
        after = pos + len(word)
        self.reach = max(self.reach, pos + len(run))
        if word in _LITERALS:
            value, fix = _LITERALS[word]
            if fix:
                self._note(fix)
            return value, after
        if word in _NON_FINITE:
            raise ReadError(pos, "non_finite", f"{word} is not a JSON number")
        self._note("unquoted_value")
        if word in _WORDLIKE_LITERALS and self._choose(2) == 0:
            return _WORDLIKE_LITERALS[word], after
        return word, after

    def _read_array(self, pos: int, depth: int) -> tuple[list[Any], int]:
        self._check_depth(pos, depth)
        result: list[Any] = []
        pos = self._expect_more(pos + 1)
        char = self.text[pos]
        if char == "]":
            return result, pos + 1
        if char == "}":
            return result, self._wrong_closer(pos)
        while True:
            start = pos
            value, pos = self.read_value(pos, depth)
            result.append(value)
            # The element's number literal, kept in case ``1 2`` is to be read as ``12``.
            literal = self.text[start:pos] if self._is_number_start(start) else None
            while True:  # what follows the element
                after_value = pos
                pos = self._expect_more(pos)
                char = self.text[pos]
                if char == "]":
                    return result, pos + 1
                if char == "}":
                    return result, self._wrong_closer(pos)
                if char == ",":
                    pos = self._expect_more(pos + 1)
                    char = self.text[pos]
                    if char in "]}":
                        self._note("removed_trailing_comma")
                        return result, pos + 1 if char == "]" else self._wrong_closer(pos)
                    break
                if not self._starts_value(pos):
                    raise ReadError(pos, "parse", "expected ',' or ']' after an array element")
                if (
                    literal is not None
                    and self._is_number_start(pos)
                    and self._inline(after_value, pos)
                ):
                    if not self.guided:
                        raise ReadError(
                            pos, "ambiguous", "numbers separated by a space: one number or two?"
                        )
                    if self._choose(2) == 1:
                        literal, result[-1], pos = self._join_number(literal, pos)
                        self._note("joined_number")
                        continue
                self._note("inserted_missing_comma")
                break

    def _starts_value(self, pos: int) -> bool:
        char = self.text[pos]
        if char in QUOTES or char in "{[-" or "0" <= char <= "9":
            return True
        match = _IDENT.match(self.text, pos)
        return match is not None and match.group() in _LITERALS

    def _is_number_start(self, pos: int) -> bool:
        char = self.text[pos]
        return char == "-" or "0" <= char <= "9"

    def _inline(self, after: int, pos: int) -> bool:
        """Whether only spaces and tabs lie between ``after`` and ``pos`` (no line break)."""
        return _INLINE_SPACE.match(self.text, after).end() == pos  # type: ignore[union-attr]

    def _join_number(self, literal: str, pos: int) -> tuple[str, int | float, int]:
        """The reading of ``1 2`` as ``12``: the previous literal and the one at ``pos`` as one."""
        second = _NUMBER.match(self.text, pos)
        if second is None:
            raise ReadError(pos, "parse", "invalid number")
        _, end = self._read_number(pos)  # checks what follows the second literal
        joined = _NUMBER.fullmatch(literal + second.group())
        if joined is None:
            raise ReadError(pos, "parse", "the two numbers do not join into one")
        return joined.group(), _number_value(joined, pos), end

    def _wrong_closer(self, pos: int) -> int:
        """A closing bracket of the wrong kind at ``pos``: it stands for the expected one
        (consumed), or the expected one is missing before it (left for the enclosing value)."""
        self._note("mismatched_bracket")
        return pos + 1 if self._choose(2) == 0 else pos

    # -- strings --------------------------------------------------------------------------------

    def read_string(
        self, pos: int, *, key: bool = False, inner_quotes: bool = True
    ) -> tuple[str, int]:
        """The string whose opening quote is at ``pos`` and the offset past its closing quote.

        A quote of the string's own kind that cannot be a delimiter (letters on both sides, as in
        ``"she said "hi" twice"``) is part of the text. Once a string holds such a quote, each
        later quote that could close it is a choice: it closes, or it is part of the text. With
        ``inner_quotes`` false (a string that is the whole value) such a quote is an error.
        """
        text, end = self.text, self.end
        opener = text[pos]
        if opener in "\"'" and text.startswith(opener * 3, pos):
            return self._read_triple(pos)
        closers, mixed = _CLOSERS[opener], _MIXED_CLOSERS[opener]
        fix = _QUOTE_FIX[opener]
        if fix:
            self._note(fix)
        plain = _PLAIN_RUN[opener]
        parts: list[str] = []
        start = pos
        pos += 1
        unescaped = False  # the string holds a quote of its own kind that is not a delimiter
        while True:
            run_end = plain.match(text, pos).end()  # type: ignore[union-attr]
            parts.append(text[pos:run_end])
            pos = run_end
            if pos >= end:
                self.reach = end
                raise ReadError(start, "truncated", "unterminated string")
            char = text[pos]
            if char in closers or char in mixed:
                own = char in closers
                if self._may_close(pos + 1, key):
                    # Quotes side by side (``"5"" wide"``) may be a quote ending the text, then
                    # the closing one; other quotes close as in JSON until one proved unescaped.
                    doubled = pos + 1 < end and text[pos + 1] == char
                    if own and ((not unescaped and not doubled) or not inner_quotes):
                        return "".join(parts), pos + 1
                    if self._continuation_fails(plain, closers, pos + 1, key, unescaped or own):
                        if not own:
                            self._note("mixed_quotes")
                        return "".join(parts), pos + 1
                    if self._choose(2) == 0:
                        if not own:
                            self._note("mixed_quotes")
                        return "".join(parts), pos + 1
                    if own:
                        self._note("escaped_inner_quote")
                        unescaped = True
                elif own:
                    if not inner_quotes:
                        raise ReadError(pos, "parse", "unexpected text after a string")
                    if self._may_open(pos):
                        raise ReadError(pos, "parse", "a quote where a new string would start")
                    if key and self._bare_value_follows(pos + 1):
                        raise ReadError(pos + 1, "parse", "expected ':' after an object key")
                    if self._value_follows(pos + 1, key) and self._choose(2) == 1:
                        # ``["" null]``: the quote may close the string before a missing comma.
                        return "".join(parts), pos + 1
                    self._note("escaped_inner_quote")
                    unescaped = True
                parts.append(char)
                pos += 1
            elif char == "\\":
                decoded, pos = self._read_escape(pos, single=opener == "'")
                parts.append(decoded)
            else:
                if unescaped and char in "\n\r":
                    # With quotes already in doubt, a string running on past the line end is
                    # a misreading, not a multi-line value.
                    raise ReadError(pos, "parse", "a string with an unescaped quote spans lines")
                # A raw newline or tab inside a string: the model meant that character.
                self._note("escaped_control_char")
                parts.append(char)
                pos += 1

    def _continuation_fails(
        self, plain: re.Pattern[str], closers: str, pos: int, key: bool, unescaped: bool
    ) -> bool:
        """Whether reading on past a quote that could close the string is sure to fail, so the
        choice need not be explored: the text ends, the line ends (once a quote is unescaped),
        or the next quote sits where a string would start (``"x "y", "n": 1``)."""
        stop = plain.match(self.text, pos).end()  # type: ignore[union-attr]
        if stop >= self.end:
            return True
        char = self.text[stop]
        if char in "\n\r":
            return unescaped
        if char in closers and self._may_open(stop):
            return not self._may_close(stop + 1, key)
        return False

    def _may_close(self, pos: int, key: bool) -> bool:
        """Whether a quote just before ``pos`` can be a closing delimiter, by what follows it."""
        pos = _INLINE_SPACE.match(self.text, pos).end()  # type: ignore[union-attr]
        if pos > self.reach:
            self.reach = pos
        if pos >= self.end:
            return True
        char = self.text[pos]
        if key:
            return char == ":"
        if char == "/":
            return self.text.startswith(("//", "/*"), pos)
        return char in _AFTER_VALUE

    def _value_follows(self, pos: int, key: bool) -> bool:
        """Whether a value or key starts at ``pos`` (after spaces) that a missing comma would
        separate from a string closing just before: a number, a literal, or ``word:``."""
        if key:
            return False
        text = self.text
        pos = _INLINE_SPACE.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= self.end:
            return False
        if text[pos] == "-" or "0" <= text[pos] <= "9":
            return True
        word = _KEY_WORD.match(text, pos)
        if word is None:
            return False
        if word.group() in _LITERALS:
            return True
        after = _INLINE_SPACE.match(text, word.end()).end()  # type: ignore[union-attr]
        return after < self.end and text[after] == ":"

    def _bare_value_follows(self, pos: int) -> bool:
        """Whether a number, bracket or literal comes next (after spaces): after a key, that is
        a missing colon, not text after a quote inside the key."""
        pos = _INLINE_SPACE.match(self.text, pos).end()  # type: ignore[union-attr]
        if pos >= self.end:
            return False
        char = self.text[pos]
        if char in "{[-" or "0" <= char <= "9":
            return True
        word = _IDENT.match(self.text, pos)
        return word is not None and word.group() in _LITERALS

    def _may_open(self, pos: int) -> bool:
        """Whether the quote at ``pos`` sits where a string would start (after ``,``, ``:``...)."""
        back = pos - 1
        text = self.text
        while back >= 0 and text[back] in " \t":
            back -= 1
        return back >= 0 and text[back] in _BEFORE_OPENING

    def _read_triple(self, pos: int) -> tuple[str, int]:
        """A Python triple-quoted string: raw newlines and lone quotes allowed, Python's escapes."""
        quote = self.text[pos]
        self._note("triple_quotes")
        body = _TRIPLE_BODY[quote].match(self.text, pos + 3).end()  # type: ignore[union-attr]
        self.reach = max(self.reach, body + 3)
        if not self.text.startswith(quote * 3, body):
            raise ReadError(pos, "truncated", "unterminated triple-quoted string")
        parts: list[str] = []
        cursor = pos + 3
        while cursor < body:
            slash = self.text.find("\\", cursor, body)
            if slash < 0:
                parts.append(self.text[cursor:body])
                break
            parts.append(self.text[cursor:slash])
            if self.text.startswith("\\\n", slash):
                cursor = slash + 2  # a line continuation
                continue
            decoded, cursor = self._read_escape(slash, single=True)
            parts.append(decoded)
        return "".join(parts), body + 3

    def _read_escape(self, pos: int, *, single: bool) -> tuple[str, int]:
        text = self.text
        if pos + 1 >= self.end:
            raise ReadError(pos, "truncated", "the text ends inside an escape")
        code = text[pos + 1]
        if code in _ESCAPES:
            return _ESCAPES[code], pos + 2
        if code == "'":
            if not single:
                self._note("needless_escape")  # ``\'`` is ``'`` to Python and JavaScript alike
            return "'", pos + 2
        if code != "u":
            raise ReadError(pos, "parse", f"invalid escape \\{code}")
        unit, pos = self._read_unit(pos)
        if 0xD800 <= unit <= 0xDBFF and text.startswith("\\u", pos):
            low, after = self._read_unit(pos)
            if 0xDC00 <= low <= 0xDFFF:
                return chr(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)), after
        if 0xD800 <= unit <= 0xDFFF:
            raise ReadError(pos, "parse", "lone surrogate escape (not encodable as UTF-8)")
        return chr(unit), pos

    def _read_unit(self, pos: int) -> tuple[int, int]:
        match = _HEX4.match(self.text, pos + 2)
        if match is None:
            if pos + 6 > self.end:
                raise ReadError(pos, "truncated", "the text ends inside a \\u escape")
            raise ReadError(pos, "parse", "invalid \\u escape")
        return int(match.group(), 16), match.end()

    # -- numbers --------------------------------------------------------------------------------

    def _read_number(self, pos: int) -> tuple[int | float, int]:
        match = _NUMBER.match(self.text, pos)
        if match is None:
            if self.text.startswith("-Infinity", pos):
                raise ReadError(pos, "non_finite", "-Infinity is not a JSON number")
            if pos + 1 >= self.end:
                raise ReadError(pos, "truncated", "the text ends inside a number")
            raise ReadError(pos, "parse", "invalid number")
        after = match.end()
        if after < self.end and (self.text[after] in "._$" or self.text[after].isalnum()):
            raise ReadError(pos, "parse", "invalid number (not in JSON's number grammar)")
        return _number_value(match, pos), after

    # -- helpers --------------------------------------------------------------------------------

    def _choose(self, alternatives: int) -> int:
        """The alternative this reading takes at the next spot that can be read several ways."""
        index = len(self.points)
        if index >= MAX_CHOICE_POINTS:
            raise ReadError(self.reach, "ambiguous", "too many spots that read more than one way")
        self.points.append(alternatives)
        return self.choices[index] if index < len(self.choices) else 0

    def _expect_more(self, pos: int) -> int:
        pos = self.skip_space(pos)
        if pos >= self.end:
            raise ReadError(pos, "truncated", "the text ends inside an object or array")
        return pos

    def _check_depth(self, pos: int, depth: int) -> None:
        if depth > self.max_depth:
            raise ReadError(pos, "depth", f"nesting deeper than {self.max_depth} levels")

    def _note(self, fix: str) -> None:
        if fix not in self.fixes:
            self.fixes.append(fix)


def _number_value(match: re.Match[str], pos: int) -> int | float:
    literal = match.group()
    if match.group(1) is None and match.group(2) is None:
        try:
            return int(literal)
        except ValueError as err:  # more digits than int() converts by default
            raise ReadError(pos, "parse", f"number too long: {err}") from err
    number = float(literal)
    if number in (float("inf"), float("-inf")):
        raise ReadError(pos, "non_finite", "number out of the float range")
    return number


def _clip(word: str, limit: int = 40) -> str:
    return word if len(word) <= limit else word[:limit] + "…"
