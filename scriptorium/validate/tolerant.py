"""A tolerant JSON reader: the grammar behind the lenient parser.

It reads one JSON value and accepts, besides strict JSON, the slips language models make whose meaning
is not in doubt: ``//`` and ``/* */`` comments, trailing commas, single quotes, smart quotes used as
string delimiters, Python literals (``True``/``False``/``None``), unquoted identifier keys, raw control
characters inside strings and non-JSON whitespace. Each slip it accepts is recorded in ``fixes``.

It refuses, on purpose, what could mean two things: missing commas (``[1 2]`` may be ``[12]``),
doubled commas (``[1,,2]`` may hold a hole), numbers outside JSON's grammar (``007``, ``.5``, ``0x1f``),
non-finite numbers, unknown escapes (``"\\d"``), lone surrogates, ``True``/``False``/``None`` as
unquoted keys (Python and JavaScript disagree on their spelling), and anything cut off at the end of
the text. Nesting deeper than ``max_depth`` is refused, so recursion stays bounded.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MAX_DEPTH", "ReadError", "Reader"]

#: Containers nested deeper than this are refused (as strict parsing refuses them).
MAX_DEPTH = 64

_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
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
_NON_FINITE = frozenset({"NaN", "Infinity", "inf", "nan"})

# A string opened by one of these closes at one of the paired characters. Smart quotes are paired
# loosely (either curly form closes) because models and keyboards mix them up.
_CLOSERS = {'"': '"', "'": "'", "“": "”“", "”": "”“", "‘": "’‘", "’": "’‘"}
_QUOTE_FIX = {'"': None, "'": "single_quotes", "“": "smart_quotes", "”": "smart_quotes"}
_QUOTE_FIX.update({"‘": "smart_quotes", "’": "smart_quotes"})
_PLAIN_RUN = {
    opener: re.compile("[^" + re.escape(closers) + r"\\\x00-\x1f]*")
    for opener, closers in _CLOSERS.items()
}
QUOTES = frozenset(_CLOSERS)


class ReadError(Exception):
    """Why the reader stopped: the offset, a stable issue keyword and a message for people.

    ``keyword`` is ``"parse"``, ``"truncated"`` (the text ended inside a value), ``"depth"`` or
    ``"non_finite"``.
    """

    def __init__(self, pos: int, keyword: str, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.keyword = keyword
        self.message = message


class Reader:
    """Reads tolerant JSON values out of one text; ``fixes`` lists the slips accepted so far."""

    def __init__(self, text: str, *, max_depth: int = MAX_DEPTH) -> None:
        self.text = text
        self.end = len(text)
        self.max_depth = max_depth
        self.fixes: list[str] = []

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
            return self.read_string(pos)
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
                return pos
            char = text[pos]
            if char == "/" and text.startswith("//", pos):
                newline = text.find("\n", pos)
                pos = end if newline < 0 else newline
                self._note("removed_comment")
            elif char == "/" and text.startswith("/*", pos):
                close = text.find("*/", pos + 2)
                if close < 0:
                    raise ReadError(pos, "truncated", "unterminated /* comment")
                pos = close + 2
                self._note("removed_comment")
            elif char.isspace():
                pos += 1
                self._note("nonstandard_whitespace")
            else:
                return pos

    # -- containers -----------------------------------------------------------------------------

    def _read_object(self, pos: int, depth: int) -> tuple[dict[str, Any], int]:
        self._check_depth(pos, depth)
        result: dict[str, Any] = {}
        pos = self._expect_more(pos + 1)
        if self.text[pos] == "}":
            return result, pos + 1
        while True:
            key, pos = self._read_key(pos)
            pos = self._expect_more(pos)
            if self.text[pos] != ":":
                raise ReadError(pos, "parse", "expected ':' after an object key")
            value, pos = self.read_value(pos + 1, depth)
            result[key] = value  # a repeated key keeps its last value, as json.loads does
            pos = self._expect_more(pos)
            char = self.text[pos]
            if char == "}":
                return result, pos + 1
            if char != ",":
                raise ReadError(pos, "parse", "expected ',' or '}' after an object member")
            pos = self._expect_more(pos + 1)
            if self.text[pos] == "}":
                self._note("removed_trailing_comma")
                return result, pos + 1

    def _read_key(self, pos: int) -> tuple[str, int]:
        char = self.text[pos]
        if char in QUOTES:
            return self.read_string(pos)
        match = _IDENT.match(self.text, pos)
        if match is None:
            raise ReadError(pos, "parse", "expected an object key")
        if match.end() >= self.end:
            raise ReadError(pos, "truncated", "the text ends inside an object key")
        word = match.group()
        if word in ("True", "False", "None"):
            # Python spells these keys "true"/"false"/"null" in JSON, JavaScript keeps the word.
            raise ReadError(pos, "parse", f"unquoted key {word!r} is ambiguous")
        self._note("unquoted_key")
        return word, match.end()

    def _read_array(self, pos: int, depth: int) -> tuple[list[Any], int]:
        self._check_depth(pos, depth)
        result: list[Any] = []
        pos = self._expect_more(pos + 1)
        if self.text[pos] == "]":
            return result, pos + 1
        while True:
            value, pos = self.read_value(pos, depth)
            result.append(value)
            pos = self._expect_more(pos)
            char = self.text[pos]
            if char == "]":
                return result, pos + 1
            if char != ",":
                raise ReadError(pos, "parse", "expected ',' or ']' after an array element")
            pos = self._expect_more(pos + 1)
            if self.text[pos] == "]":
                self._note("removed_trailing_comma")
                return result, pos + 1

    # -- scalars --------------------------------------------------------------------------------

    def read_string(self, pos: int) -> tuple[str, int]:
        """The string whose opening quote is at ``pos`` and the offset past its closing quote."""
        text, end = self.text, self.end
        opener = text[pos]
        closers = _CLOSERS[opener]
        fix = _QUOTE_FIX[opener]
        if fix:
            self._note(fix)
        plain = _PLAIN_RUN[opener]
        parts: list[str] = []
        start = pos
        pos += 1
        while True:
            run_end = plain.match(text, pos).end()  # type: ignore[union-attr]
            parts.append(text[pos:run_end])
            pos = run_end
            if pos >= end:
                raise ReadError(start, "truncated", "unterminated string")
            char = text[pos]
            if char in closers:
                return "".join(parts), pos + 1
            if char == "\\":
                decoded, pos = self._read_escape(pos, single=opener == "'")
                parts.append(decoded)
            else:
                # A raw newline or tab inside a string: the model meant that character.
                self._note("escaped_control_char")
                parts.append(char)
                pos += 1

    def _read_escape(self, pos: int, *, single: bool) -> tuple[str, int]:
        text = self.text
        if pos + 1 >= self.end:
            raise ReadError(pos, "truncated", "the text ends inside an escape")
        code = text[pos + 1]
        if code in _ESCAPES:
            return _ESCAPES[code], pos + 2
        if code == "'" and single:
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
        literal = match.group()
        if match.group(1) is None and match.group(2) is None:
            try:
                return int(literal), after
            except ValueError as err:  # more digits than int() converts by default
                raise ReadError(pos, "parse", f"number too long: {err}") from err
        number = float(literal)
        if number in (float("inf"), float("-inf")):
            raise ReadError(pos, "non_finite", "number out of the float range")
        return number, after

    # -- helpers --------------------------------------------------------------------------------

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


def _clip(word: str, limit: int = 40) -> str:
    return word if len(word) <= limit else word[:limit] + "…"
