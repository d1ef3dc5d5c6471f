"""Numbers, and the words that stand for values.

Numbers: JSON's grammar, the looser forms Python and JavaScript read alike (``.5``, ``1.``,
``+1``, ``1_000``), digit groups (``2,000.50``: one number, or a number and the next item) and
two literals a space apart read as one (``[1 2]`` as ``[12]``, offered only under a schema).
Leading zeros, hex and non-finite numbers are refused.

Words: JSON's literals and Python's (``True``, ``False``, ``None``), words some reader takes for a
literal (``yes``, ``NULL``: a choice), misspelled literals (``ture``: a choice), and unquoted values
led by digits that no reader takes for a number (dates, clock times, UUIDs, dotted versions),
read as strings. The word shapes (identifiers, unquoted keys) live here too.
"""

from __future__ import annotations

import re
from typing import Any

from scriptorium.validate.json.tolerant.cursor import Cursor, ReadError

__all__ = [
    "DIGIT_WORD",
    "IDENT",
    "KEY_WORD",
    "LITERALS",
    "NON_FINITE",
    "NOT_A_LITERAL",
    "WORDLIKE_LITERALS",
    "is_number_start",
    "join_number",
    "read_number",
    "spelled_literal",
]

# -- numbers ----------------------------------------------------------------------------------

# JSON's number grammar; group 1 (a fraction) or group 2 (an exponent) makes the number a float.
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
# Numbers Python and JavaScript read but JSON does not: a sign, a bare or trailing decimal point,
# digit separators. Leading zeros stay out (``007`` is octal to some readers).
_LOOSE_NUMBER = re.compile(
    r"[+-]?(?:(?:0|[1-9](?:_?[0-9])*)(?:\.(?:[0-9](?:_?[0-9])*)?)?|\.[0-9](?:_?[0-9])*)"
    r"(?:[eE][+-]?[0-9]+)?"
)
# US digit grouping with a decimal part (``2,000.50``); without one, ``12,111`` may be 12.111.
_GROUPED_NUMBER = re.compile(r"-?[1-9][0-9]{0,2}(?:,[0-9]{3})+\.[0-9]+")


def is_number_start(cur: Cursor, pos: int) -> bool:
    """Whether a number (JSON's, or a looser one) may start at ``pos``."""
    char = cur.text[pos]
    if char == "-" or char == "+" or "0" <= char <= "9":
        return True
    return char == "." and pos + 1 < cur.end and "0" <= cur.text[pos + 1] <= "9"


def read_number(cur: Cursor, pos: int) -> tuple[int | float, int]:
    """The number at ``pos`` and the offset past it."""
    text = cur.text
    grouped = _GROUPED_NUMBER.match(text, pos)
    # ``2,000.50``: one number with digit groups, or a number and the next item.
    if grouped is not None and not _number_goes_on(cur, grouped.end()) and cur.choose(2) == 1:
        cur.note("thousands_separator")
        return float(grouped.group().replace(",", "")), grouped.end()
    match = _NUMBER.match(text, pos)
    loose = _LOOSE_NUMBER.match(text, pos)
    if loose is not None and (match is None or loose.end() > match.end()):
        return _read_loose_number(cur, pos, loose)
    if match is None:
        if text.startswith(("-Infinity", "+Infinity"), pos):
            raise ReadError(pos, "non_finite", "Infinity is not a JSON number")
        if pos + 1 >= cur.end:
            raise ReadError(pos, "truncated", "the text ends inside a number")
        raise ReadError(pos, "parse", "invalid number")
    if _number_goes_on(cur, match.end()):
        raise ReadError(pos, "parse", "invalid number (not in JSON's number grammar)")
    return _number_value(match, pos), match.end()


def _read_loose_number(cur: Cursor, pos: int, loose: re.Match[str]) -> tuple[int | float, int]:
    """A number JSON lacks but Python and JavaScript read alike: ``.5``, ``1.``, ``+1``,
    ``1_000`` (JavaScript's separators are Python's)."""
    literal = loose.group()
    after = loose.end()
    if _number_goes_on(cur, after):
        raise ReadError(pos, "parse", "invalid number (not in JSON's number grammar)")
    if after >= cur.end and literal.endswith("."):
        raise ReadError(pos, "truncated", "the text ends inside a number")
    cur.note("nonstandard_number")
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


def _number_goes_on(cur: Cursor, after: int) -> bool:
    """Whether the text right after a number literal makes it something else (``1.2.3``,
    ``10px``, ``0x1f``)."""
    if after >= cur.end:
        return False
    char = cur.text[after]
    return char in "._$" or char.isalnum()


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


def join_number(cur: Cursor, literal: str, pos: int) -> tuple[str, int | float, int]:
    """The reading of ``1 2`` as ``12``: the previous literal and the one at ``pos`` as one."""
    second = _NUMBER.match(cur.text, pos)
    if second is None:
        raise ReadError(pos, "parse", "invalid number")
    _, end = read_number(cur, pos)  # checks what follows the second literal
    joined = _NUMBER.fullmatch(literal + second.group())
    if joined is None:
        raise ReadError(pos, "parse", "the two numbers do not join into one")
    return joined.group(), _number_value(joined, pos), end


# -- words ------------------------------------------------------------------------------------

# A word that may be a literal (or, where none is expected, a bare word to refuse).
IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
# Unquoted keys: a word of letters, digits, ``_``, ``$`` and inner hyphens (``content-type``).
KEY_WORD = re.compile(r"(?:[^\W\d]|\$)(?:[\w$\u200c\u200d]|-(?=[\w$]))*")
LITERALS: dict[str, tuple[Any, str | None]] = {
    "true": (True, None),
    "false": (False, None),
    "null": (None, None),
    "True": (True, "python_literal"),
    "False": (False, "python_literal"),
    "None": (None, "python_literal"),
}
NON_FINITE = frozenset({"NaN", "Infinity", "inf", "nan", "-Infinity", "-inf"})
# Unquoted words that a reader may take for a literal (YAML, other languages) or for the word.
WORDLIKE_LITERALS: dict[str, Any] = {
    **dict.fromkeys(("yes", "Yes", "YES", "on", "On", "ON", "TRUE"), True),
    **dict.fromkeys(("no", "No", "NO", "off", "Off", "OFF", "FALSE"), False),
    **dict.fromkeys(("NULL", "Null", "nil", "Nil", "NIL", "none", "undefined"), None),
}
_SPELLED_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None, "none": None}
NOT_A_LITERAL: Any = object()


def spelled_literal(word: str) -> Any:
    """The literal ``word`` may be a slip for (``ture``, ``nul``, ``tRue``), else
    ``NOT_A_LITERAL``. Slips keep the first letter: one swap of neighbours, one letter too many
    or too few, or the literal in odd case."""
    lower = word.lower()
    if lower in _SPELLED_LITERALS:
        return _SPELLED_LITERALS[lower]
    for literal, value in _SPELLED_LITERALS.items():
        if lower[:1] == literal[0] and _one_slip(lower, literal):
            return value
    return NOT_A_LITERAL


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


# Unquoted values led by digits that no reader takes for a number: an ISO date or date-time, a
# clock time, a UUID, a dotted version or address (``1.2.3``, ``10.0.0.1``); they must end where
# a value ends.
DIGIT_WORD = re.compile(
    r"(?:(?:[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?)?"
    r"|[0-9]{1,2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?)(?:Z|[+-][0-9]{2}:?[0-9]{2})?"
    r"|[0-9][0-9a-fA-F]{7}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|[0-9]+(?:\.[0-9]+){2,}(?:-[0-9A-Za-z.]+)?)"
    r"(?=[ \t]*(?:[,，}\]\n\r]|//|/\*|#|$)|[ \t]+(?:[\"'“]|[\w$-]+[ \t]*[:：]))"
)
