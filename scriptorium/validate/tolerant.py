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
  or ``word:`` follows (``["" null]``: a comma may be missing), a smart quote that may close a
  straight-quoted string, a quote in an array item that may close it before an item whose opening
  quote is missing (``["a" b", "c"]``), and a quote after an escaped backslash (``\\\\"``: an
  escaped backslash, or an over-escaped quote);
- a string opened by doubled quotes (``""key""``): quotes inside the text, or doubled delimiters
  (decided once per text: every doubled opener reads the same way);
- a closing bracket of the wrong kind: it replaces the expected one (``[1, 2}``), or the expected
  one is missing before it (``{"a": [1, 2}``); an empty container closed by the wrong kind
  (``{]``) is ``{}`` or ``[]``;
- the outermost bracket, when members or items follow it (``{"a": 1}, "b": 2}``): the value closed
  there (what follows continues it, so that reading is never an answer by itself), or the bracket
  is stray;
- two numbers separated by spaces on one line (``[1 2]``: two items, or ``[12]``), only when a
  schema is there to tell (``guided``); without one the reader refuses with ``ambiguous``;
- digit groups with a comma (``2,000.50``: one number, or a number and another item);
- a parenthesised single value (``(1)``: Python's ``1``, or a one-item tuple);
- adjacent strings written Python's way (``'a' 'b'``: one concatenated string, or a missing comma);
- ``True``/``False``/``None`` as unquoted keys (Python spells them ``"true"``, JavaScript keeps the
  word), unquoted words like ``yes`` or ``NULL`` (a literal, or the word as a string), and words
  that look like a misspelled literal (``ture``).

It refuses, on purpose: doubled commas and leading commas in arrays (JavaScript reads a hole),
numbers with leading zeros or in hex, non-finite numbers, unknown escapes beside known ones
(``"C:\\new\\x"``; alone they are text, ``"\\d"``), code as a value (``new X(1)``), lone
surrogates, bytes and f-string literals, keys holding line breaks, and anything cut off at the end
of the text. Nesting deeper than ``max_depth`` is refused, so recursion stays bounded; every
reading moves forward only, so one reading costs time linear in what it reads.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MAX_CHOICE_POINTS", "MAX_DEPTH", "QUOTES", "ReadError", "Reader"]

#: Containers nested deeper than this are refused.
MAX_DEPTH = 64
#: A reading with more spots that could be read two ways than this is refused as ambiguous.
MAX_CHOICE_POINTS = 16

# Invisible characters Python's isspace() misses: zero-width spaces and joiners, the BOM, the
# Mongolian vowel separator.
_INVISIBLE = frozenset("\u200b\u200c\u200d\u2060\ufeff\u180e")
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_INLINE_SPACE = re.compile(r"[ \t]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
# Numbers Python and JavaScript read but JSON does not: a sign, a bare or trailing decimal point,
# digit separators. Leading zeros stay out (``007`` is octal to some readers).
_LOOSE_NUMBER = re.compile(
    r"[+-]?(?:(?:0|[1-9](?:_?[0-9])*)(?:\.(?:[0-9](?:_?[0-9])*)?)?|\.[0-9](?:_?[0-9])*)"
    r"(?:[eE][+-]?[0-9]+)?"
)
# US digit grouping with a decimal part (``2,000.50``); without one, ``12,111`` may be 12.111.
_GROUPED_NUMBER = re.compile(r"-?[1-9][0-9]{0,2}(?:,[0-9]{3})+\.[0-9]+")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
# Unquoted keys: a word of letters, digits, ``_``, ``$`` and inner hyphens (``content-type``).
_KEY_WORD = re.compile(r"(?:[^\W\d]|\$)(?:[\w$\u200c\u200d]|-(?=[\w$]))*")
# Numbers as keys, where Python and JavaScript spell the key alike (no exponent, no trailing zero).
_KEY_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]*[1-9])?(?=[ \t]*[:：])")
_QUOTED_KEY = re.compile(r"(?:\"[^\"\n]*\"|'[^'\n]*')[ \t]*[:：]")
# ... and one whose colon is missing before a value on its line.
_QUOTED_KEY_NO_COLON = re.compile(r"(?:\"[^\"\n]*\"|'[^'\n]*')[ \t]+[\"'{\[0-9-]")
# An unquoted string value runs to a comma, a bracket, a quote or the end of the line; a colon
# inside it is fine unless a space or quote follows (``a: b`` looks like a member, ``http://`` not).
_BARE_RUN = re.compile(r"(?:[^,，:{}\[\]\"“”\n\r]|:(?![\s\"]))*")
# How far back a comment before a quote is looked for (keeps each look bounded).
_LOOK_BACK = 200
_LINE_COMMENT = re.compile(r"(?:(?<=\s)|(?<=[,，:：{\[]))(?://|#)")
_BARE_COMMENT = re.compile(r"\s(?://|/\*|#)")
# A comment starting inside a string's text (``# `` and a space: ``#5`` is text).
_TEXT_COMMENT = re.compile(r"(?:(?<=\s)|(?<=[\"'“”‘’]))(?://|/\*|#\s)")
_QUOTED_WORD = re.compile(r"(?:^|\s)['‘`]")
# Code, not a value: a constructor (``new NumberInt(5)``) or a call (``ObjectId(``, ``Date.now()``).
_CODE_VALUE = re.compile(r"new\s+[A-Za-z_$]|.*?[\w$.]\(")
# Unquoted values led by digits that no reader takes for a number: an ISO date or date-time, a
# clock time, a UUID, a dotted version or address (``1.2.3``, ``10.0.0.1``); they must end where
# a value ends.
_DIGIT_WORD = re.compile(
    r"(?:(?:[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?)?"
    r"|[0-9]{1,2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?)(?:Z|[+-][0-9]{2}:?[0-9]{2})?"
    r"|[0-9][0-9a-fA-F]{7}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|[0-9]+(?:\.[0-9]+){2,}(?:-[0-9A-Za-z.]+)?)"
    r"(?=[ \t]*(?:[,，}\]\n\r]|//|/\*|#|$)|[ \t]+(?:[\"'“]|[\w$-]+[ \t]*[:：]))"
)
_PYTHON_PREFIX = re.compile(r"([rRuUbBfF]{1,2})(?=['\"])")
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
_SPELLED_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None, "none": None}
_PYTHON_KEYS = {"True": "true", "False": "false", "None": "null"}

# A string opened by one of these closes at one of the paired characters. Smart quotes and corner
# brackets are paired loosely (either form closes) because models and keyboards mix them up.
_CLOSERS = {
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
_MIXED_CLOSERS = {'"': "”“", "'": "’‘", "“": '"', "”": '"', "‘": "'", "’": "'"}
_MIXED_CLOSERS.update({"`": "", "「": "", "『": ""})
_QUOTE_FIX = {'"': None, "'": "single_quotes", "“": "smart_quotes", "”": "smart_quotes"}
_QUOTE_FIX.update({"‘": "smart_quotes", "’": "smart_quotes", "`": "backtick_quotes"})
_QUOTE_FIX.update({"「": "corner_brackets", "『": "corner_brackets"})
_PLAIN_RUN = {
    opener: re.compile("[^" + re.escape(closers + _MIXED_CLOSERS[opener]) + r"\\\x00-\x1f]*")
    for opener, closers in _CLOSERS.items()
}
_TRIPLE_BODY = {q: re.compile(rf"(?:[^{q}\\]|\\[\s\S]|{q}(?!{q}{q}))*") for q in ('"', "'")}
QUOTES = frozenset(_CLOSERS)
# A delimiter and a quote that opens a string after it (the reading runs on through them).
_OPENING_AFTER_DELIMITER = re.compile("[,，:：{\\[][ \\t]*[" + "".join(sorted(_CLOSERS)) + "]")
# ... or where a string, a container or the line's end may come after it.
_DELIMITER_OPENS = re.compile(
    "[,，:：{\\[][ \\t\\n\\r]*(?:[{\\["
    + "".join(sorted(_CLOSERS))
    + "]|$)|[:：][ \\t]|^[ \\t]*[,，:：]"
)
# After a closing quote (value strings), one of these may follow; anything else means the quote
# was part of the text. Quotes and brackets are here because a comma may be missing before them.
_AFTER_VALUE = frozenset(",，}])\n\r{[#") | QUOTES
# Before an opening quote (or a quote that is a delimiter), one of these comes.
_BEFORE_OPENING = frozenset(",，:：{[")
_CLOSING = "}])"


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
    accepted; ``reach`` is the furthest offset looked at (the reading's cost). After a read,
    ``continued_at`` is set when the reading closed the value before members or items that
    continue it (such a reading only competes with others, it is never an answer), and
    ``assumed_missing`` when it read a closing bracket as missing before a wrong one.
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
        self.continued_at: int | None = None
        self.assumed_missing = False
        self._missing_before = -1  # where a bracket was last taken for missing
        self._swallowed = ""  # closing brackets read as text after a quote that could close
        self._doubled: bool | None = None  # how doubled openers (``""key""``) read, once decided
        self._open_quote: str | None = None  # an item whose opening quote is missing comes next
        self._last_string: tuple[int, str] = (-1, "")  # end offset and opener of the last string

    # -- entry points ---------------------------------------------------------------------------

    def read_document(self) -> tuple[Any, int]:
        """The one value the whole text holds (space and comments around it allowed), and where
        the reading ends: the end of the text, or ``continued_at``."""
        value, pos = self.read_value(0)
        value, pos = self._joined(value, pos, member=False)  # ``"a" + "b"`` as the whole value
        if self.continued_at is not None:
            return value, self.continued_at
        pos = self.skip_space(pos)
        if pos < self.end:
            raise ReadError(pos, "parse", "unexpected text after the value")
        return value, self.end

    def read_value(self, pos: int, depth: int = 0, *, item: bool = False) -> tuple[Any, int]:
        """The value starting at ``pos`` (after space) and the offset just past it."""
        pos = self.skip_space(pos)
        if pos >= self.end:
            raise ReadError(pos, "truncated", "the text ends where a value should start")
        text = self.text
        char = text[pos]
        if char == "{":
            return self._read_object(pos, depth + 1)
        if char == "[":
            return self._read_array(pos, depth + 1, "]")
        if char == "(":
            self._note("python_tuple")
            return self._read_array(pos, depth + 1, ")")
        if char in QUOTES:
            if char == "`" and (depth == 0 or text.startswith("```", pos)):
                # Alone, backticks are Markdown's inline code or a fence, not a string.
                raise ReadError(pos, "parse", "a code span, not a value")
            # A whole text that is one string with quotes inside reads as prose just as well:
            # only a schema (which asks for a string) makes the string reading worth trying.
            return self.read_string(pos, inner_quotes=depth > 0 or self.guided, item=item)
        if self._is_number_start(pos):
            return self._read_number(pos)
        prefixed = _PYTHON_PREFIX.match(text, pos)
        if prefixed is not None:
            return self._read_prefixed(pos, prefixed)
        match = _IDENT.match(text, pos)
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

    def skip_space(self, pos: int, *, note: bool = True) -> int:
        """The offset of the next token: JSON space, other Unicode space and comments skipped.

        With ``note`` false (looking ahead) nothing is recorded as a fix.
        """
        text, end = self.text, self.end
        while True:
            pos = _JSON_SPACE.match(text, pos).end()  # type: ignore[union-attr]
            if pos >= end:
                break
            char = text[pos]
            if (char == "/" and text.startswith("//", pos)) or char == "#":
                newline = text.find("\n", pos)
                pos = end if newline < 0 else newline
                fix = "removed_comment"
            elif char == "/" and text.startswith("/*", pos):
                close = text.find("*/", pos + 2)
                if close < 0:
                    self.reach = end
                    raise ReadError(pos, "truncated", "unterminated /* comment")
                pos = close + 2
                fix = "removed_comment"
            elif char.isspace() or char in _INVISIBLE:
                pos += 1
                fix = "nonstandard_whitespace"
            else:
                break
            if note:
                self._note(fix)
        if pos > self.reach:
            self.reach = pos
        return pos

    # -- containers -----------------------------------------------------------------------------

    def _read_object(self, pos: int, depth: int) -> tuple[Any, int]:
        self._check_depth(pos, depth)
        result: dict[str, Any] = {}
        pos = self._expect_more(pos + 1)
        char = self.text[pos]
        if char == "}":
            return result, self._closed(pos + 1, depth, "{", stray=False)
        if char in "])":
            return self._close_empty(pos, "{")
        if self._comma_at(pos):
            # ``{, "a": 1}``: an object has no holes, so a leading comma can only be a slip.
            self._note("removed_leading_comma")
            pos = self._expect_more(pos + 1)
            if self.text[pos] == "}":
                return result, self._closed(pos + 1, depth, "{", stray=False)
        while True:
            key_at = pos
            key, pos = self._read_key(pos)
            pos = self._colon(key_at, pos)
            value, pos = self._read_member_value(pos, depth)
            result[key] = value  # a repeated key keeps its last value, as json.loads does
            pos, closed = self._after_member(pos, depth)
            if closed:
                return result, pos

    def _after_member(self, pos: int, depth: int) -> tuple[int, bool]:
        """What follows an object member: the offset of the next key (False), or the offset past
        the object's end (True)."""
        while True:
            pos = self._expect_more(pos)
            char = self.text[pos]
            if char in _CLOSING:
                if char == ")":
                    raise ReadError(pos, "parse", "a parenthesis closing an object")
                end = pos + 1 if char == "}" else self._wrong_closer(pos)
                if end > pos:
                    end = self._closed(end, depth, "{")
                    if end < 0:  # a stray bracket: the members go on
                        pos = -end
                        continue
                return end, True
            if self._comma_at(pos):
                pos = self._expect_more(pos + 1)
                if self.text[pos] in _CLOSING:
                    self._note("removed_trailing_comma")
                    continue
                if self._comma_at(pos):
                    raise ReadError(pos, "parse", "two commas in a row")
                return pos, False
            if self._key_starts(pos):
                # The next member's key: only a comma can be missing here (the ':' after the
                # key confirms it, or the reading fails).
                self._note("inserted_missing_comma")
                return pos, False
            raise ReadError(pos, "parse", "expected ',' or '}' after an object member")

    def _key_follows(self, pos: int) -> bool:
        """Whether a key and its colon start at ``pos`` (``"b":``, ``b:``, ``"b" "v"``)."""
        if _QUOTED_KEY.match(self.text, pos) or _QUOTED_KEY_NO_COLON.match(self.text, pos):
            return True
        word = _KEY_WORD.match(self.text, pos)
        if word is None:
            return False
        after = _INLINE_SPACE.match(self.text, word.end()).end()  # type: ignore[union-attr]
        return after < self.end and self.text[after] in ":："

    def _key_starts(self, pos: int) -> bool:
        text = self.text
        return (
            text[pos] in QUOTES
            or _KEY_WORD.match(text, pos) is not None
            or _KEY_NUMBER.match(text, pos) is not None
        )

    def _read_key(self, pos: int) -> tuple[str, int]:
        text = self.text
        char = text[pos]
        if char in QUOTES:
            return self.read_string(pos, key=True)
        number = _KEY_NUMBER.match(text, pos)
        if number is not None:
            # ``{5: "x"}``: Python's json.dumps and JavaScript both write the key as "5".
            self._note("non_string_key")
            return number.group(), number.end()
        match = _KEY_WORD.match(text, pos)
        if match is None:
            raise ReadError(pos, "parse", "expected an object key")
        if match.end() >= self.end:
            raise ReadError(pos, "truncated", "the text ends inside an object key")
        word = match.group()
        if text.startswith('"', match.end()) and self._key_quote(match.end() + 1):
            # ``{a": 1}``: the key lost its opening quote.
            self._note("missing_opening_quote")
            return word, match.end() + 1
        self._note("unquoted_key")
        if word in _PYTHON_KEYS:
            # Python's json.dumps writes {True: 1} as {"true": 1}; JavaScript keeps "True".
            return (_PYTHON_KEYS[word] if self._choose(2) == 0 else word), match.end()
        return word, match.end()

    def _colon(self, key_at: int, after_key: int) -> int:
        """The offset past the colon after the key read from ``key_at`` to ``after_key`` (a
        full-width or doubled colon accepted). A quoted key followed on its line by a value has
        lost its colon (``{"a" 1}``): nothing else can stand between a key and a value."""
        pos = self._expect_more(after_key)
        char = self.text[pos]
        if char == "：":
            self._note("fullwidth_punctuation")
        elif char != ":":
            if self._colon_missing(key_at, after_key, pos):
                self._note("inserted_missing_colon")
                return pos
            raise ReadError(pos, "parse", "expected ':' after an object key")
        after = _INLINE_SPACE.match(self.text, pos + 1).end()  # type: ignore[union-attr]
        if after < self.end and self.text[after] in ":：":
            self._note("doubled_colon")
            return after + 1
        return pos + 1

    def _colon_missing(self, key_at: int, after_key: int, pos: int) -> bool:
        """Whether the key at ``key_at`` (quoted) is followed, on its line, by a value at ``pos``
        that is not a bare word (``{"a" 1}``, ``{"a" "b"}``, ``{"a" [1]}``)."""
        text = self.text
        if text[key_at] not in QUOTES or not self._inline(after_key, pos):
            return False
        char = text[pos]
        if char in QUOTES:
            return pos > after_key  # (``"a""b"`` is a doubled quote, not a key and a value)
        if after_key - key_at <= 2 and pos == after_key:
            return False  # ``""0""``: an empty key right before a value is a doubled quote
        return char in "{[" or self._is_number_start(pos) or self._bare_value_follows(pos)

    def _read_member_value(self, pos: int, depth: int) -> tuple[Any, int]:
        pos = self.skip_space(pos)
        word = _IDENT.match(self.text, pos)
        if word is not None and word.group() in _LITERALS:
            after = _INLINE_SPACE.match(self.text, word.end()).end()  # type: ignore[union-attr]
            if after > word.end() and self._key_follows(after):
                # ``{"a": False "b": 1}``: the literal, then the next member's key.
                return self.read_value(pos, depth)
        digit_word = _DIGIT_WORD.match(self.text, pos)
        if digit_word is not None:
            # A date, a time or a UUID written without quotes: a string to every reader.
            self._note("unquoted_value")
            return digit_word.group(), digit_word.end()
        if pos < self.end and (self.text[pos].isalpha() or self.text[pos] == "_"):
            prefixed = _PYTHON_PREFIX.match(self.text, pos)
            if prefixed is not None:
                return self._joined(*self._read_prefixed(pos, prefixed), member=True)
            return self._read_bare(pos)
        value, end = self.read_value(pos, depth)
        return self._joined(value, end, member=True)

    def _read_array(self, pos: int, depth: int, closer: str) -> tuple[Any, int]:
        """An array (``closer`` ``]``) or a Python tuple (``)``), read into a list."""
        self._check_depth(pos, depth)
        result: list[Any] = []
        pos = self._expect_more(pos + 1)
        char = self.text[pos]
        if char == closer:
            return result, self._closed(pos + 1, depth, "[", stray=False)
        if char in _CLOSING:
            return self._close_empty(pos, "[")
        separated = False  # a comma was seen: ``(x,)`` is a tuple, ``(x)`` may be just x
        while True:
            start = pos
            value, pos = self.read_value(pos, depth, item=True)
            value, pos = self._joined(value, pos, member=False)
            result.append(value)
            # The element's number literal, kept in case ``1 2`` is to be read as ``12``.
            literal = self.text[start:pos] if self._is_number_start(start) else None
            while True:  # what follows the element
                after_value = pos
                if self._open_quote is not None:
                    # One space parts the items; more spaces belong to the item.
                    item_at = pos + 1
                    result.append(self._missing_open_item(item_at))
                    pos, literal = self._last_string[0], None
                    continue
                pos = self._expect_more(pos)
                char = self.text[pos]
                if char in _CLOSING:
                    end = pos + 1 if char == closer else self._wrong_closer(pos)
                    if end > pos:
                        end = self._closed(end, depth, "[")
                        if end < 0:  # a stray bracket: the items go on
                            pos = -end
                            continue
                    # ``(x)`` is x to Python and JavaScript; a one-item tuple needs ``(x,)``.
                    single = closer == ")" and len(result) == 1 and not separated
                    if single and self._choose(2) == 0:
                        return result[0], end
                    return result, end
                if self._comma_at(pos):
                    separated = True
                    pos = self._expect_more(pos + 1)
                    if self.text[pos] in _CLOSING:
                        self._note("removed_trailing_comma")
                        continue
                    break
                if not self._starts_value(pos):
                    raise ReadError(pos, "parse", "expected ',' or ']' after an array element")
                if literal is not None and self._is_number_start(pos):
                    if self._inline(after_value, pos):
                        if not self.guided:
                            raise ReadError(
                                pos, "ambiguous", "numbers separated by a space: one number or two?"
                            )
                        if self._choose(2) == 1:
                            literal, result[-1], pos = self._join_number(literal, pos)
                            self._note("joined_number")
                            continue
                elif self._python_adjacent(after_value, pos) and self._choose(2) == 1:
                    result[-1], pos = self._concatenate(result[-1], pos)
                    continue
                self._note("inserted_missing_comma")
                separated = True
                break

    def _closed(self, end: int, depth: int, opener: str, *, stray: bool = True) -> int:
        """``end`` past the outermost container's closing bracket, where members or items may
        follow that continue the value (``{"a": 1}, "b": 2}``). Then either the value closed
        there (``continued_at`` is set: the reading only competes), or (``stray``: not for an
        empty container) the bracket is stray and the container goes on: returned as ``-end``."""
        if depth != 1 or not self._continues(end, opener):
            return end
        if not stray or self._choose(2) == 0:
            self.continued_at = end
            return end
        if self.assumed_missing:
            # A bracket taken for missing and then one left over: the two slips cancel, and
            # the reading where the wrong bracket stands for the missing one has neither.
            raise ReadError(end - 1, "parse", "a bracket taken for missing and one left over")
        self._note("removed_stray_bracket")
        return -end

    def _continues(self, pos: int, opener: str) -> bool:
        """Whether what follows ``pos`` continues a closed object (a comma and a key, or a quoted
        key and a colon) or array (a comma and a value), more stray closing brackets allowed
        before it (``{"a": 1}}, "b": 2}``)."""
        try:
            pos = self.skip_space(pos, note=False)
            while pos < self.end and self.text[pos] in _CLOSING:
                pos = self.skip_space(pos + 1, note=False)
        except ReadError:
            return False
        if pos >= self.end:
            return False
        comma = self.text[pos] in ",，"
        while pos < self.end and self.text[pos] in ",，":  # ``],, null]``: commas, then more
            try:
                pos = self.skip_space(pos + 1, note=False)
            except ReadError:
                return False
        if comma and pos >= self.end:
            # ``{"a": 1},`` at the end: the generation stopped before what came next.
            raise ReadError(pos, "truncated", "the text ends after a comma following the value")
        text = self.text
        if opener == "[":
            return comma and self._starts_value(pos)
        if _QUOTED_KEY.match(text, pos) is not None:
            return True
        if not comma:
            return False
        if text[pos] in QUOTES:
            return True
        word = _KEY_WORD.match(text, pos) or _KEY_NUMBER.match(text, pos)
        if word is None:
            return False
        after = _INLINE_SPACE.match(text, word.end()).end()  # type: ignore[union-attr]
        return after < self.end and text[after] in ":："

    def _close_empty(self, pos: int, opener: str) -> tuple[Any, int]:
        """An empty container closed by the wrong kind of bracket (``{]``): nothing inside says
        which was meant, ``{}`` or ``[]``."""
        self._note("mismatched_bracket")
        as_opened = self._choose(2) == 0
        return ({} if as_opened == (opener == "{") else []), pos + 1

    def _starts_value(self, pos: int) -> bool:
        char = self.text[pos]
        if char in QUOTES or char in "{[(" or self._is_number_start(pos):
            return True
        match = _IDENT.match(self.text, pos)
        return match is not None and (
            match.group() in _LITERALS or _PYTHON_PREFIX.match(self.text, pos) is not None
        )

    def _is_number_start(self, pos: int) -> bool:
        char = self.text[pos]
        if char == "-" or char == "+" or "0" <= char <= "9":
            return True
        return char == "." and pos + 1 < self.end and "0" <= self.text[pos + 1] <= "9"

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
        expected = "]" if self.text[pos] == "}" else "}"
        if self._missing_before == pos or expected in self._swallowed:
            # (A string that read ``"}`` as text, then a ``}`` taken for missing: the slips
            # cancel, and the reading where the quote closed has neither.)
            # One wrong bracket stands for one missing bracket, not for several: ``[[1, 2}``
            # read as ``[[1, 2]]`` would close a value that was cut off.
            return pos + 1
        if self._choose(2) == 0:
            return pos + 1
        self.assumed_missing = True
        self._missing_before = pos
        return pos

    def _comma_at(self, pos: int) -> bool:
        char = self.text[pos]
        if char == "，":
            self._note("fullwidth_punctuation")
            return True
        return char == ","

    # -- strings --------------------------------------------------------------------------------

    def read_string(
        self, pos: int, *, key: bool = False, inner_quotes: bool = True, item: bool = False
    ) -> tuple[str, int]:
        """The string whose opening quote is at ``pos`` and the offset past its closing quote.

        A quote of the string's own kind that cannot be a delimiter (letters on both sides, as in
        ``"she said "hi" twice"``) is part of the text. Once a string holds such a quote, each
        later quote that could close it is a choice: it closes, or it is part of the text. With
        ``inner_quotes`` false (a string that is the whole value) such a quote is an error.
        ``item`` says the string is an array item (a quote in it may close it before an item
        whose opening quote is missing).
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
        doubled = self._doubled_opener(pos, key)
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
                self.reach = end
                raise ReadError(start, "truncated", "unterminated string")
            char = text[pos]
            if char in closers or char in mixed:
                own = char in closers
                if not own and (unescaped or passed) and self._opens_here(pos):
                    # Once a quote that could close the string was text, a quote of any kind
                    # right after a delimiter (``"a "b" c"},“d”``) starts a string: the reading
                    # that runs on through the delimiter is a misreading.
                    raise ReadError(pos, "parse", "a quote where a new string would start")
                if own and self._after_plus(pos, start) and not self._may_close(pos + 1, key):
                    # ``"abc + "def"``: a join whose first string lost its closing quote, with
                    # or without the space; not a quote inside the text.
                    raise ReadError(pos, "parse", "a quote after '+' inside a string")
                if (
                    own
                    and not (unescaped or passed)
                    and inner_quotes
                    and self._opens_here(pos)
                    and self._no_delimiter_before(start, pos)
                    and (not self._may_close(pos + 1, key) or self._choose(2) == 1)
                ):
                    # A quote right after a delimiter opens the next string: this one's closing
                    # quote is missing before the delimiter (when the quote cannot close this
                    # string, that is the only reading left).
                    return self._closed_before_delimiter(parts, pos, opener, start)
                if doubled and own and text.startswith(char * 2, pos):
                    if self._may_close(pos + 2, key):
                        return self._finish(parts, opener, pos + 2)
                    parts.append(char)  # a doubled quote inside: one quote character
                    pos += 2
                    continue
                if self._may_close(pos + 1, key) and not (
                    own and unescaped and self._opens_here(pos)
                ):
                    # (Once the string holds an unescaped quote, a quote right after a delimiter
                    # opens the next string: it does not close this one.)
                    # Quotes side by side (``"5"" wide"``) may be a quote ending the text, then
                    # the closing one; other quotes close as in JSON until one proved unescaped.
                    twin = pos + 1 < end and text[pos + 1] == char
                    if own and ((not unescaped and not twin) or not inner_quotes):
                        return self._finish(parts, opener, pos + 1)
                    if own and self._opens_here(pos):
                        # Right after a delimiter, before more text, a quote is a delimiter: it
                        # closes, or (above) opens the next string; it is not text.
                        return self._finish(parts, opener, pos + 1)
                    if self._continuation_fails(plain, closers, pos + 1, key, unescaped or own):
                        if not own:
                            self._note("mixed_quotes")
                        return self._finish(parts, opener, pos + 1)
                    if self._choose(2) == 0:
                        if not own:
                            self._note("mixed_quotes")
                        return self._finish(parts, opener, pos + 1)
                    passed = True
                    after = _INLINE_SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
                    if after < end and text[after] in _CLOSING:
                        self._swallowed += text[after]
                    if own and parts[-2:] == ["\\", ""] and self._choose(2) == 1:
                        parts[-2] = ""  # ``\\"`` as a quote escaped twice
                        self._note("double_escaped_quote")
                    elif own:
                        self._note("escaped_inner_quote")
                        unescaped = True
                elif own:
                    flags = (key, inner_quotes, item, unescaped)
                    closed = self._inner_quote(parts, pos, opener, flags)
                    if closed:
                        return self._finish(parts, opener, pos + 1)
                    unescaped = unescaped or closed is False
                parts.append(char)
                pos += 1
            elif char == "\\":
                if literal is None:
                    literal = self._backslashes_are_text(pos, closers + mixed)
                if literal:
                    if _escape_meant(text, pos):
                        raise ReadError(pos, "parse", "a string whose backslashes read two ways")
                    parts.append(char)  # ``"C:\Users\x"``: no escape was meant
                    pos += 1
                    continue
                decoded, pos = self._read_escape(pos, single=opener in "'`")
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
                self._note("escaped_control_char")
                parts.append(char)
                pos += 1

    def _inner_quote(
        self, parts: list[str], pos: int, opener: str, flags: tuple[bool, bool, bool, bool]
    ) -> bool | None:
        """A quote of the string's own kind that cannot close it by what follows: True when this
        reading closes the string there anyway, False when the quote is text, None when it is an
        escaped quote after all (an over-escaped one: its backslash is dropped from ``parts``).
        ``flags`` are the string's: key, inner quotes allowed, array item, holds an unescaped
        quote already."""
        key, inner_quotes, item, unescaped = flags
        if not inner_quotes:
            raise ReadError(pos, "parse", "unexpected text after a string")
        if self._may_open(pos):
            raise ReadError(pos, "parse", "a quote where a new string would start")
        if key and self._bare_value_follows(pos + 1):
            raise ReadError(pos + 1, "parse", "expected ':' after an object key")
        if not key and self._key_quote(pos + 1):
            raise ReadError(pos, "parse", "a quote before ':' inside a value (a key's quote?)")
        if self._value_follows(pos + 1, key) and self._choose(2) == 1:
            # ``["" null]``: the quote may close the string before a missing comma.
            return True
        if item and not unescaped and self._closing_shape(pos) and self._choose(2) == 1:
            # ``["a" b", "c"]``: the quote may close "a" before an item whose opening quote is
            # missing, as much as it may be a stray quote inside "a\" b".
            self._open_quote = opener
            return True
        if parts[-2:] == ["\\", ""] and self._choose(2) == 1:
            # ``\\"``: an escaped backslash before a quote, or a quote escaped twice.
            parts[-2] = ""
            self._note("double_escaped_quote")
            return None
        self._note("escaped_inner_quote")
        return False

    def _no_delimiter_before(self, start: int, pos: int) -> bool:
        """Whether the string opened at ``start`` holds text, and no delimiter, before the one
        that comes before the quote at ``pos`` (else its closing quote may be missing before
        either; an empty string missing a quote is a lone quote, not a reading)."""
        back = self._delimiter_before(pos)
        content = self.text[start + 1 : back]
        # A delimiter inside counts where a string could start after it (``"a, "b`` holds one;
        # ``"https://x`` and ``"b,c`` do not).
        return bool(content) and _DELIMITER_OPENS.search(content) is None

    def _backslashes_are_text(self, pos: int, closers: str) -> bool:
        r"""Whether no backslash from ``pos`` to the next quote that may close the string (or the
        line end) starts an escape any reader knows (``"C:\Users\x"``, ``"\d+"``): then the
        backslashes are text, as Python keeps them, and nobody meant JavaScript's dropping
        them. One known escape among them (``"C:\new\x"``) leaves the string refused."""
        text = self.text
        cursor = pos
        while cursor < self.end and text[cursor] not in closers and text[cursor] not in "\n\r":
            if text[cursor] == "\\":
                if _escape_meant(text, cursor):
                    return False
                cursor += 1
            cursor += 1
        if cursor > self.reach:
            self.reach = cursor
        self._note("literal_backslash")
        return True

    def _after_plus(self, pos: int, start: int) -> bool:
        """Whether a ``+`` or a comment comes right before the quote at ``pos`` (spaces skipped)
        inside the string opened at ``start``: the quote opens a string, as in ``"abc + "def"``
        or ``"abc/* note */"def"``, so this one lost its closing quote."""
        back = pos - 1
        text = self.text
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

    def _closed_before_delimiter(
        self, parts: list[str], pos: int, opener: str, start: int
    ) -> tuple[str, int]:
        """A quote that opens a new string right after a delimiter (``"New York, "gender": ...``)
        while the string before it never closed: its closing quote is missing before the
        delimiter, where the reading goes on. (Read as text, the quote would need the string to
        hold an unescaped quote after a delimiter, which is refused.) Not offered once the
        reading took a quote that could close the string for text: then it was not missing."""
        back = self._delimiter_before(pos)
        value = "".join(parts)
        if _TEXT_COMMENT.search(self.text, start + 1, back + 1) is not None:
            # ``"abc // note\n, "b"``: the quote is missing before the comment, or at the line end.
            raise ReadError(back, "parse", "a comment in a string whose closing quote is missing")
        self._note("missing_closing_quote")
        return self._finish([value[: len(value) - (pos - back)]], opener, back)

    def _finish(self, parts: list[str], opener: str, end: int) -> tuple[str, int]:
        value = "".join(parts)
        if opener == "`" and "${" in value:
            raise ReadError(end, "parse", "a JavaScript template with a placeholder")
        self._last_string = (end, opener)
        return value, end

    def _doubled_opener(self, pos: int, key: bool) -> bool:
        """Whether the string at ``pos`` opens with doubled quotes read as one delimiter.

        ``""key""`` is quotes inside the key, or a text whose quotes were all doubled (the
        escaping of CSV): decided once for the text, the first time such an opener is met.
        """
        text = self.text
        opener = text[pos]
        if opener not in "\"'" or not text.startswith(opener * 2, pos):
            return False
        if self._may_close(pos + 2, key):
            return False  # an empty string
        if self._doubled is None:
            self._doubled = self._choose(2) == 1
        if self._doubled:
            self._note("doubled_quotes")
        return self._doubled

    def _missing_open_item(self, pos: int) -> str:
        """The item after a string closed early: its text up to a quote that can close it, on
        the same line (``green"`` in ``["red" green", "blue"]``), escapes read as in a
        string."""
        opener = self._open_quote
        assert opener is not None
        self._open_quote = None
        closers = _CLOSERS[opener] + _MIXED_CLOSERS[opener]
        text = self.text
        parts: list[str] = []
        cursor = pos
        while cursor < self.end and text[cursor] not in closers:
            char = text[cursor]
            if char in "\n\r":
                raise ReadError(cursor, "parse", "no item whose opening quote is missing")
            if char == "\\":
                decoded, cursor = self._read_escape(cursor, single=opener != '"')
                parts.append(decoded)
                continue
            parts.append(char)
            cursor += 1
        closed = cursor < self.end and self._may_close(cursor + 1, False)
        if not closed or cursor == pos:
            raise ReadError(pos, "parse", "no item whose opening quote is missing")
        self._note("inserted_missing_comma")
        self._note("missing_opening_quote")
        self._last_string = (cursor + 1, opener)
        return "".join(parts)

    def _closing_shape(self, pos: int) -> bool:
        """Whether the quote at ``pos`` sits like a closing quote: right after the text, before a
        space (``"red" green"``; in ``"she said "hi"`` the first inner quote opens a
        quotation, and in ``"don"t"`` the quote is inside a word)."""
        text = self.text
        return not text[pos - 1].isspace() and pos + 1 < self.end and text[pos + 1] in " \t"

    def _continuation_fails(
        self, plain: re.Pattern[str], closers: str, pos: int, key: bool, unescaped: bool
    ) -> bool:
        """Whether reading on past a quote that could close the string is sure to fail, so the
        choice need not be explored: the text ends, the line ends (once a quote is unescaped),
        or the next quote sits where a string would start (``"x "y", "n": 1``)."""
        stop = plain.match(self.text, pos).end()  # type: ignore[union-attr]
        if stop >= self.end:
            return True
        if _OPENING_AFTER_DELIMITER.search(self.text, pos, stop) is not None:
            # ``"a "b" c", 'd'``: a quote of another kind right after a delimiter opens a string;
            # a string holding quotes in doubt does not run on through it.
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
            if char in "/#":  # ``'a' /* note */: 1``: a comment between a key and its colon
                try:
                    pos = self.skip_space(pos, note=False)
                except ReadError:
                    return False
                return pos < self.end and self.text[pos] in ":："
            # A value on the key's line: the colon is missing (``{"a" 1}``, ``{"a" "b"}``).
            if char in ":：":
                return True
            spaced = self.text[pos - 1] in " \t"  # ``"a""b"`` is no key before a value
            return (spaced and char in QUOTES) or self._bare_value_follows(pos)
        if char == "/":
            return self.text.startswith(("//", "/*"), pos)
        if char == "+":
            return self._plus_at(pos) >= 0
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

    def _key_quote(self, pos: int) -> bool:
        """Whether a colon follows ``pos`` (after spaces): a quote before it closes a key."""
        after = _INLINE_SPACE.match(self.text, pos).end()  # type: ignore[union-attr]
        return after < self.end and self.text[after] in ":："

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

    def _opens_here(self, pos: int) -> bool:
        """Whether the quote at ``pos`` reads as the opening of a string: right after a
        delimiter, and before text (a quote before ``}``, ``,`` or the line end closes)."""
        if not self._may_open(pos):
            return False
        after = _INLINE_SPACE.match(self.text, pos + 1).end()  # type: ignore[union-attr]
        return after < self.end and self.text[after] not in ",，}])\n\r"

    def _may_open(self, pos: int) -> bool:
        """Whether the quote at ``pos`` sits where a string would start (after ``,``, ``:``...,
        spaces, line breaks and comments skipped)."""
        return self._delimiter_before(pos) >= 0

    def _delimiter_before(self, pos: int) -> int:
        """The offset of the delimiter (``,`` ``:`` ``{`` ``[``) before ``pos``, spaces, line
        breaks and comments skipped; -1 when something else comes first."""
        back = pos - 1
        text = self.text
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
        self._last_string = (body + 3, quote)
        return "".join(parts), body + 3

    def _read_prefixed(self, pos: int, prefix: re.Match[str]) -> tuple[str, int]:
        """A Python string literal with a prefix, read as Python reads it: ``u'..'`` is the
        string, ``r'..'`` keeps its backslashes; bytes and f-strings are not text."""
        letters = prefix.group(1).lower()
        quote_at = prefix.end()
        if letters == "u":
            self._note("python_string_prefix")
            return self.read_string(quote_at)
        if letters != "r":
            kind = "a bytes literal" if "b" in letters else "an f-string" if "f" in letters else ""
            message = f"{kind or 'a string prefix Python refuses'} ({prefix.group(1)}'...')"
            raise ReadError(pos, "parse", f"{message} is not JSON text")
        self._note("python_string_prefix")
        text = self.text
        quote = text[quote_at]
        if text.startswith(quote * 3, quote_at):
            raise ReadError(pos, "parse", "a raw triple-quoted string")
        cursor = quote_at + 1
        while cursor < self.end and text[cursor] != quote:
            if text[cursor] in "\n\r":
                raise ReadError(cursor, "parse", "a raw string spanning lines")
            cursor += 2 if text[cursor] == "\\" else 1
        if cursor >= self.end:
            self.reach = self.end
            raise ReadError(pos, "truncated", "unterminated raw string")
        if not self._may_close(cursor + 1, False):
            raise ReadError(cursor, "parse", "unexpected text after a raw string")
        self._last_string = (cursor + 1, quote)
        return text[quote_at + 1 : cursor], cursor + 1

    def _joined(self, value: Any, pos: int, *, member: bool) -> tuple[Any, int]:
        """A string value and the strings joined to it: ``"x" + "y"`` (one string to Python and
        JavaScript alike), and in an object ``'x' 'y'`` (Python's implicit concatenation; in
        an array that is a choice, see :meth:`_python_adjacent`)."""
        text = self.text
        while isinstance(value, str) and self._last_string[0] == pos:
            after = _INLINE_SPACE.match(text, pos).end()  # type: ignore[union-attr]
            plus = self._plus_at(pos)
            if plus >= 0:
                start = self.skip_space(plus + 1)  # ``"a" +\n "b"``, ``"a" + /* c */ "b"``
                if start < self.end and text[start] in QUOTES:
                    more, pos = self.read_string(start)
                    value += more
                    self._note("joined_strings")
                    continue
                return value, pos
            if member and self._python_adjacent(pos, after) and self._choose(2) == 1:
                value, pos = self._concatenate(value, after)
                continue
            return value, pos
        return value, pos

    def _plus_at(self, pos: int) -> int:
        """The offset of a ``+`` after ``pos`` (space, line breaks and comments skipped) when
        a quote follows it the same way; else -1."""
        try:
            plus = self.skip_space(pos, note=False)
            if plus >= self.end or self.text[plus] != "+":
                return -1
            start = self.skip_space(plus + 1, note=False)
        except ReadError:
            return -1
        return plus if start < self.end and self.text[start] in QUOTES else -1

    def _python_adjacent(self, after_value: int, pos: int) -> bool:
        """Whether the string just read and the one at ``pos`` stand side by side on one line,
        one of them in single quotes: Python reads them as one string."""
        text = self.text
        last_end, last_opener = self._last_string
        return (
            last_end == after_value
            and pos < self.end
            and text[pos] in QUOTES
            and self._inline(after_value, pos)
            and "'" in (last_opener, text[pos])
        )

    def _concatenate(self, value: Any, pos: int) -> tuple[str, int]:
        more, end = self.read_string(pos)
        self._note("joined_strings")
        return str(value) + more, end

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

    # -- unquoted values ------------------------------------------------------------------------

    def _read_bare(self, pos: int) -> tuple[Any, int]:
        """An unquoted member value: a literal, or words read as a string (``{"city": New York}``)."""
        end = self._bare_end(pos)
        run = self.text[pos:end]
        comment = _BARE_COMMENT.search(run)
        if comment is not None:
            run = run[: comment.start()]
        elif end >= self.end:
            self.reach = self.end
            raise ReadError(pos, "truncated", "the text ends inside an unquoted value")
        word = run.rstrip()
        after = pos + len(word)
        if after == end and self.text.startswith('"', end) and self._may_close(end + 1, False):
            # ``{"a": foo", "b": 1}``: the value lost its opening quote.
            self._note("missing_opening_quote")
            self._last_string = (end + 1, '"')
            return word, end + 1
        if word in _LITERALS:
            value, fix = _LITERALS[word]
            if fix:
                self._note(fix)
            return value, after
        if word in _NON_FINITE:
            raise ReadError(pos, "non_finite", f"{word} is not a JSON number")
        if _QUOTED_WORD.search(word) is not None:
            # ``True 'type' 'x'``: quoted words inside an unquoted value are not its text.
            raise ReadError(pos, "parse", "quotes inside an unquoted value")
        if _CODE_VALUE.match(word) is not None:
            # ``new NumberInt(5)``, ``ObjectId("..")``: code whose value is not in the text.
            raise ReadError(pos, "parse", f"code, not a value: {_clip(word)!r}")
        self._note("unquoted_value")
        if word in _WORDLIKE_LITERALS and self._choose(2) == 1:
            return _WORDLIKE_LITERALS[word], after
        spelled = _NOT_A_LITERAL if word in _WORDLIKE_LITERALS else _spelled_literal(word)
        if spelled is not _NOT_A_LITERAL and self._choose(2) == 1:
            self._note("misspelled_literal")
            return spelled, after
        return word, after

    def _bare_end(self, pos: int) -> int:
        """Where an unquoted value starting at ``pos`` ends: at a comma, a quote, a bracket that
        closes the member, or the end of its line. A bracketed group attached to a word is part
        of it (``words{in brackets}``), and the value goes on over lines that do not start a
        member or close the object."""
        text = self.text
        cursor = pos
        while True:
            cursor = _BARE_RUN.match(text, cursor).end()  # type: ignore[union-attr]
            if cursor >= self.end:
                return cursor
            char = text[cursor]
            if char in "{[" and not text[cursor - 1].isspace():
                group = self._group_end(cursor)
                if group is not None:
                    self._note("unquoted_value_brackets")
                    cursor = group
                    continue
            if char in "\n\r" and self._continues_on_next_line(cursor):
                self._note("multiline_unquoted_value")
                cursor += 1
                continue
            return cursor

    def _group_end(self, pos: int) -> int | None:
        """The offset past the bracket closing the one at ``pos`` on the same line, when the
        group holds no quote and its brackets pair up; else None."""
        stack: list[str] = []
        text = self.text
        for cursor in range(pos, self.end):
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

    def _continues_on_next_line(self, newline: int) -> bool:
        """Whether the line after ``newline`` carries on an unquoted value: it starts with a
        word that is not a key (``word:``), a literal or a comment."""
        text = self.text
        start = _JSON_SPACE.match(text, newline).end()  # type: ignore[union-attr]
        if text.count("\n", newline, start) > 1 or start >= self.end:
            return False  # a blank line ends the value
        word = _KEY_WORD.match(text, start)
        if word is None or word.group() in _LITERALS:
            return False
        after = _INLINE_SPACE.match(text, word.end()).end()  # type: ignore[union-attr]
        return after >= self.end or text[after] not in ":："

    # -- numbers --------------------------------------------------------------------------------

    def _read_number(self, pos: int) -> tuple[int | float, int]:
        text = self.text
        grouped = _GROUPED_NUMBER.match(text, pos)
        # ``2,000.50``: one number with digit groups, or a number and the next item.
        if grouped is not None and not self._number_goes_on(grouped.end()) and self._choose(2) == 1:
            self._note("thousands_separator")
            return float(grouped.group().replace(",", "")), grouped.end()
        match = _NUMBER.match(text, pos)
        loose = _LOOSE_NUMBER.match(text, pos)
        if loose is not None and (match is None or loose.end() > match.end()):
            return self._read_loose_number(pos, loose)
        if match is None:
            if text.startswith(("-Infinity", "+Infinity"), pos):
                raise ReadError(pos, "non_finite", "Infinity is not a JSON number")
            if pos + 1 >= self.end:
                raise ReadError(pos, "truncated", "the text ends inside a number")
            raise ReadError(pos, "parse", "invalid number")
        if self._number_goes_on(match.end()):
            raise ReadError(pos, "parse", "invalid number (not in JSON's number grammar)")
        return _number_value(match, pos), match.end()

    def _read_loose_number(self, pos: int, loose: re.Match[str]) -> tuple[int | float, int]:
        """A number JSON lacks but Python and JavaScript read alike: ``.5``, ``1.``, ``+1``,
        ``1_000`` (JavaScript's separators are Python's)."""
        literal = loose.group()
        after = loose.end()
        if self._number_goes_on(after):
            raise ReadError(pos, "parse", "invalid number (not in JSON's number grammar)")
        if after >= self.end and literal.endswith("."):
            raise ReadError(pos, "truncated", "the text ends inside a number")
        self._note("nonstandard_number")
        digits = literal.replace("_", "")
        if "." in digits or "e" in digits or "E" in digits:
            number = float(digits)
            if number in (float("inf"), float("-inf")):
                raise ReadError(pos, "non_finite", "number out of the float range")
            return number, after
        try:
            return int(digits), after
        except ValueError as err:  # more digits than int() converts by default
            raise ReadError(pos, "parse", f"number too long: {err}") from err

    def _number_goes_on(self, after: int) -> bool:
        """Whether the text right after a number literal makes it something else (``1.2.3``,
        ``10px``, ``0x1f``)."""
        if after >= self.end:
            return False
        char = self.text[after]
        return char in "._$" or char.isalnum()

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


_NOT_A_LITERAL: Any = object()
# What follows a backslash that some reader (JSON, Python, JavaScript) reads as an escape.
_MEANT_ESCAPE = re.compile(
    r"\\(?:[\"'`“”‘’\\/bfnrtva0-9\n\r]|u[0-9a-fA-F]|u\{|x[0-9a-fA-F]|U[0-9a-fA-F]{8}|N\{)"
)


def _escape_meant(text: str, pos: int) -> bool:
    """Whether the backslash at ``pos`` starts an escape some reader knows."""
    return _MEANT_ESCAPE.match(text, pos) is not None or pos + 1 >= len(text)


def _spelled_literal(word: str) -> Any:
    """The literal ``word`` may be a slip for (``ture``, ``nul``, ``tRue``), else
    ``_NOT_A_LITERAL``. Slips keep the first letter: one swap of neighbours, one letter too many
    or too few, or the literal in odd case."""
    lower = word.lower()
    if lower in _SPELLED_LITERALS:
        return _SPELLED_LITERALS[lower]
    for literal, value in _SPELLED_LITERALS.items():
        if lower[:1] == literal[0] and _one_slip(lower, literal):
            return value
    return _NOT_A_LITERAL


def _one_slip(word: str, literal: str) -> bool:
    if len(word) == len(literal):
        diff = [i for i in range(len(word)) if word[i] != literal[i]]
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and word[diff[0]] == literal[diff[1]]
            and word[diff[1]] == literal[diff[0]]
        )
    shorter, longer = sorted((word, literal), key=len)
    if len(longer) - len(shorter) != 1 or len(shorter) < 3:
        return False
    return any(longer[:i] + longer[i + 1 :] == shorter for i in range(len(longer)))


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
