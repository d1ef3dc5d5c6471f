"""The reader other modules use: :class:`Reader`, a cursor with the entry points.

It reads the whole text as one value (only space and comments may follow it), one value at an
offset, and says whether a bracket in prose opens something that reads like JSON.
"""

from __future__ import annotations

from typing import Any

from scriptorium.validate.json.tolerant.containers import read_value
from scriptorium.validate.json.tolerant.cursor import Cursor, ReadError
from scriptorium.validate.json.tolerant.literals import IDENT, LITERALS, NON_FINITE
from scriptorium.validate.json.tolerant.quotes import QUOTES
from scriptorium.validate.json.tolerant.strings import joined

__all__ = ["Reader"]


class Reader(Cursor):
    """Reads tolerant JSON values out of one text, one reading per instance.

    A :class:`~.cursor.Cursor` (its state is the reading's record) with the entry points. The
    rules live in functions over a cursor; the entry points live here, not on the cursor, because
    the value reader sits above every rule module and the cursor below them. ``choices`` picks
    the alternative at each spot that can be read two ways (0 when not given); ``guided`` says a
    schema will choose among the readings, which opens readings only a schema can settle
    (``[1 2]`` as ``[12]``, a whole text that is a string with quotes inside). ``points`` lists,
    per spot met, how many alternatives it had; ``fixes`` lists the slips accepted; ``reach`` is
    the furthest offset looked at (the reading's cost). After a read, ``continued_at`` is set when
    the reading closed the value before members or items that continue it (such a reading only
    competes with others, it is never an answer), and ``assumed_missing`` when it read a closing
    bracket as missing before a wrong one.
    """

    __slots__ = ()

    def read_document(self) -> tuple[Any, int]:
        """The one value the whole text holds (space and comments around it allowed), and where
        the reading ends: the end of the text, or ``continued_at``."""
        value, pos = read_value(self, 0)
        value, pos = joined(self, value, pos, member=False)  # ``"a" + "b"`` as the whole value
        if self.continued_at is not None:
            return value, self.continued_at
        pos = self.skip_space(pos)
        if pos < self.end:
            raise ReadError(pos, "parse", "unexpected text after the value")
        return value, self.end

    def read_value(self, pos: int) -> tuple[Any, int]:
        """The value starting at ``pos`` (after space) and the offset just past it."""
        return read_value(self, pos)

    def first_item_looks_like_json(self, pos: int, opener: str) -> bool:
        """Whether what follows the bracket at ``pos - 1`` reads like JSON rather than prose.

        A string, number, bracket or literal does; so does ``word:`` after ``{``. A bare word or
        a stray character (``[see below]``, ``[...]``) does not.
        """
        text = self.text
        try:
            pos = self.skip_space(pos)
        except ReadError:
            return True
        if pos >= self.end:
            return False
        char = text[pos]
        if char in QUOTES or char in "{[" or "0" <= char <= "9":
            return True
        if char == "-":
            return text.startswith(("0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "I"), pos + 1)
        match = IDENT.match(text, pos)
        if match is None:
            return False
        if opener == "[":
            return match.group() in LITERALS or match.group() in NON_FINITE
        try:
            after = self.skip_space(match.end())
        except ReadError:
            return True
        return after < self.end and text[after] == ":"
