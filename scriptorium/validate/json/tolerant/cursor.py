"""The cursor: the state one reading shares across the grammar, and the moves every rule makes.

A :class:`Cursor` holds the text, how far the reading has looked (``reach``, its cost), the record
of the reading (the ``fixes`` it accepted, the ``points`` where it met a choice) and the choices it
was told to take, and the few facts one rule leaves for another (a bracket taken for missing, the
last string's end and opener...). Its methods are the moves shared by every other module: skipping
space and comments, noting a fix, taking the next choice, checking the nesting depth.

The rules themselves are functions over a cursor, one module per kind; :class:`ReadError` is how
any of them stops the reading.
"""

from __future__ import annotations

import re

__all__ = [
    "CLOSING",
    "INLINE_SPACE",
    "JSON_SPACE",
    "MAX_CHOICE_POINTS",
    "MAX_DEPTH",
    "Cursor",
    "ReadError",
    "clip",
]

#: Containers nested deeper than this are refused.
MAX_DEPTH = 64
#: A reading with more spots that could be read two ways than this is refused as ambiguous.
MAX_CHOICE_POINTS = 16
# Invisible characters Python's isspace() misses: zero-width spaces and joiners, the BOM, the
# Mongolian vowel separator.
_INVISIBLE = frozenset("\u200b\u200c\u200d\u2060\ufeff\u180e")
JSON_SPACE = re.compile(r"[ \t\n\r]*")
INLINE_SPACE = re.compile(r"[ \t]*")
#: The brackets that close a container (a parenthesis closes a Python tuple).
CLOSING = "}])"


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


class Cursor:
    """One reading of ``text``: where it has looked, what it accepted, which way it went.

    ``choices`` names the alternative to take at each spot that reads two ways, in the order the
    spots are met (0 past its end); ``guided`` says a schema will choose among the readings. The
    record: ``points`` (per spot met, how many alternatives it had), ``fixes`` (the slips accepted,
    each once, in the order met), ``reach`` (the furthest offset looked at), ``continued_at`` and
    ``assumed_missing`` (see :class:`~.reader.Reader`). The rest is left by one rule for another:
    ``missing_before`` (where a bracket was last taken for missing), ``swallowed`` (closing
    brackets read as text after a quote that could close), ``doubled`` (how doubled openers read,
    once decided), ``open_quote`` (an item whose opening quote is missing comes next) and
    ``last_string`` (the end offset and opener of the last string read).
    """

    __slots__ = (
        "assumed_missing",
        "choices",
        "continued_at",
        "doubled",
        "end",
        "fixes",
        "guided",
        "last_string",
        "max_depth",
        "missing_before",
        "open_quote",
        "points",
        "reach",
        "swallowed",
        "text",
    )

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
        self.missing_before = -1  # where a bracket was last taken for missing
        self.swallowed = ""  # closing brackets read as text after a quote that could close
        self.doubled: bool | None = None  # how doubled openers (``""key""``) read, once decided
        self.open_quote: str | None = None  # an item whose opening quote is missing comes next
        self.last_string: tuple[int, str] = (-1, "")  # end offset and opener of the last string

    def skip_space(self, pos: int, *, note: bool = True) -> int:
        """The offset of the next token: JSON space, other Unicode space and comments skipped.

        With ``note`` false (looking ahead) nothing is recorded as a fix.
        """
        text, end = self.text, self.end
        while True:
            pos = JSON_SPACE.match(text, pos).end()  # type: ignore[union-attr]
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
                self.note(fix)
        if pos > self.reach:
            self.reach = pos
        return pos

    def inline(self, after: int, pos: int) -> bool:
        """Whether only spaces and tabs lie between ``after`` and ``pos`` (no line break)."""
        return INLINE_SPACE.match(self.text, after).end() == pos  # type: ignore[union-attr]

    def choose(self, alternatives: int) -> int:
        """The alternative this reading takes at the next spot that can be read several ways."""
        index = len(self.points)
        if index >= MAX_CHOICE_POINTS:
            raise ReadError(self.reach, "ambiguous", "too many spots that read more than one way")
        self.points.append(alternatives)
        return self.choices[index] if index < len(self.choices) else 0

    def expect_more(self, pos: int) -> int:
        pos = self.skip_space(pos)
        if pos >= self.end:
            raise ReadError(pos, "truncated", "the text ends inside an object or array")
        return pos

    def check_depth(self, pos: int, depth: int) -> None:
        if depth > self.max_depth:
            raise ReadError(pos, "depth", f"nesting deeper than {self.max_depth} levels")

    def note(self, fix: str) -> None:
        if fix not in self.fixes:
            self.fixes.append(fix)


def clip(word: str, limit: int = 40) -> str:
    return word if len(word) <= limit else word[:limit] + "…"
