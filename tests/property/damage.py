"""A model of how a language model writes and damages JSON, for the lenient reader's properties.

A case starts from a valid JSON value. :func:`write` renders it the way a model might: in a code
fence or not, with prose around it or a reasoning block before it, compact or indented, and with
the slips of the families in :data:`FAMILIES` at places a random generator picks. Each family is
either *recoverable* (the reader's rule says a careful reader has one reading, so it must recover
the value) or *never* (no value, or not the meant one, can be read, so it must refuse). A case
knows the value its text means, or that it means none.

The placement rules are the rule's own conditions, nothing more: a missing comma goes between
values on separate lines or between strings, objects and arrays; an unquoted value is a plain word
that is no literal; a wrong closing bracket closes a non-empty container; and so on.

Run ``python -m tests.property.damage`` for the recall of each family (see
``internal_docs/validation.md``).
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

#: Families a careful reader recovers: the reader must return the value.
RECOVERABLE = (
    "bom",
    "fence",
    "prose",
    "reasoning",
    "trailing_comma",
    "leading_comma",
    "comment",
    "comment_beside_colon",
    "single_quotes",
    "smart_quotes",
    "triple_quotes",
    "python_literals",
    "unquoted_key",
    "unquoted_value",
    "missing_comma",
    "missing_colon",
    "inner_quotes",
    "wrong_closer",
    "unquoted_timestamp",
    "windows_path",
    "concatenation",
)
#: Families where no value, or not the meant one, can be read: the reader must refuse.
NEVER = (
    "truncated",
    "missing_value",
    "doubled_comma_in_array",
    "numbers_a_space_apart",
    "constructor_call",
    "plus_in_open_string",
    "comment_in_open_string",
    "known_and_unknown_escapes",
    "empty_wrong_closer",
)
FAMILIES = RECOVERABLE + NEVER
#: Families that are the way the whole text is written, not a slip at one place.
_WRAPPERS = ("bom", "fence", "prose", "reasoning")

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLAIN_WORDS = re.compile(r"[^\W\d_]+(?: [^\W\d_]+)*")
# Words a reader may take for a literal, or that are one slip from one, are never written bare.
_LITERALISH = {
    "true",
    "false",
    "null",
    "none",
    "nan",
    "inf",
    "infinity",
    "yes",
    "no",
    "on",
    "off",
    "nil",
    "undefined",
}
_PREFIXES = ("Here is the JSON you asked for:", "Sure! The result:", "Answer:")
_SUFFIXES = ("Let me know if you need anything else.", "Hope this helps!", "")
_REASONING = (
    "<thinking>\nThe user wants JSON. A first try: {'draft': 1}\n</thinking>\n",
    "<think>\nLet me check the fields once more.\n</think>\n\n",
)
_COMMENTS = ("// note", "# note", "/* note */")
_TIMESTAMPS = (
    "2024-01-01T10:00:00Z",
    "2023-12-31",
    "2024-06-30T23:59:59.5+02:00",
    "10:30",
    "1.2.3",
)
_PATHS = ("C:\\Users\\x", "D:\\data\\Project\\q.csv", "\\d+\\s*", "C:\\Program Files\\App")


@dataclass
class Case:
    """A text written from ``value`` with the slips of ``families``.

    ``means``: returning ``value`` is right (false when a ``never`` slip put code or a hole where
    part of it was; a cut-off text still means its value, it just cannot be read). ``clear``:
    every slip is recoverable, so the reader must return ``value``. ``refuse``: the reader must
    return nothing.
    """

    text: str
    value: Any
    families: tuple[str, ...]
    means: bool

    @property
    def clear(self) -> bool:
        return all(family in RECOVERABLE for family in self.families)

    @property
    def refuse(self) -> bool:
        return not self.means

    def due(self, ok: bool, value: Any) -> bool:
        """Whether the reader's outcome is as the rule says."""
        if ok:
            return self.means and same_value(value, self.value)
        return not self.clear


@dataclass
class _Special:
    """A leaf written in a family's special way; ``value`` is what it means."""

    family: str
    value: Any
    raw: str


@dataclass
class _Writer:
    rng: random.Random
    slips: dict[str, set[int]]  # family -> the indexes of the eligible places that get it
    indent: bool
    python: bool  # Python literals everywhere
    quotes: str  # '"' or "'" (the writer's usual quote)
    newline: str = "\n"
    tab: str = "  "
    seen: Counter[str] = field(default_factory=Counter)
    applied: set[str] = field(default_factory=set)

    def at(self, family: str) -> bool:
        """Whether this eligible place of ``family`` is the one chosen for it."""
        index = self.seen[family]
        self.seen[family] += 1
        if index in self.slips.get(family, ()):
            self.applied.add(family)
            return True
        return False

    def gap(self, depth: int) -> str:
        return self.newline + self.tab * depth if self.indent else ""

    def comment(self) -> str:
        chosen = self.rng.choice(_COMMENTS)
        if not self.indent:
            return " /* note */ "
        return " " + chosen + ("" if chosen.startswith("/*") else self.newline)

    # -- values -------------------------------------------------------------------------------

    def value(self, value: Any, depth: int, *, member: bool = False) -> str:
        if isinstance(value, _Special):
            return value.raw
        if isinstance(value, dict):
            return self.obj(value, depth)
        if isinstance(value, list):
            return self.arr(value, depth)
        if isinstance(value, str):
            return self.string(value, member=member)
        if value is True or value is False or value is None:
            literal = json.dumps(value)
            if self.python or self.at("python_literals"):
                literal = {"true": "True", "false": "False", "null": "None"}[literal]
                self.applied.add("python_literals")
            return literal
        return json.dumps(value)

    def string(self, text: str, *, member: bool, key: bool = False) -> str:
        plain = _PLAIN_WORDS.fullmatch(text) is not None
        literal = text.lower() in _LITERALISH or _near_literal(text)
        if member and plain and not literal and self.at("unquoted_value"):
            return text
        if not key and len(text) >= 2 and self.at("concatenation"):
            cut = len(text) // 2
            if not _splits_escape(text, cut):
                return self.quoted(text[:cut]) + " + " + self.quoted(text[cut:])
        if plain and self.at("smart_quotes"):
            return "“" + text + "”"
        if not key and plain and self.at("triple_quotes"):
            return '"""' + text + '"""'
        if self.quotes == "'" or self.at("single_quotes"):
            self.applied.add("single_quotes")
            return _single(text)
        return json.dumps(text, ensure_ascii=self.rng.random() < 0.3)

    def quoted(self, text: str) -> str:
        return _single(text) if self.quotes == "'" else json.dumps(text, ensure_ascii=False)

    def obj(self, value: dict[str, Any], depth: int) -> str:
        if not value:
            if self.at("empty_wrong_closer"):
                return "{]"
            return "{}"
        parts = ["{"]
        if self.at("leading_comma"):
            parts.append(",")
        members = list(value.items())
        keys = [self.key(key) for key, _ in members]
        for index, (_, item) in enumerate(members):
            parts.append(self.gap(depth + 1) if self.indent or not index else " ")
            if self.at("comment"):
                parts.append(self.comment().lstrip(" ") + (self.tab * (depth + 1) * self.indent))
            written_key = keys[index]
            parts.append(written_key)
            written = self.value(item, depth + 1, member=True)
            # A string whose quotes are in doubt needs its delimiters: no slip beside it.
            bare = _is_bare(written) or (
                isinstance(item, _Special) and item.family == "inner_quotes"
            )
            quoted_key = written_key[0] in "\"'“"
            fits = quoted_key and _missing_colon_fits(written)
            if not bare and fits and self.at("missing_colon"):
                parts.append(" ")
            elif self.at("comment_beside_colon"):
                parts.append(" /* note */: ")
            else:
                parts.append(": ")
            if self.at("missing_value"):
                written = ""
            parts.append(written)
            if index < len(members) - 1:
                # A comma may go missing after a member unless its value is a bare word
                # (the word would run on) or the next member starts on the same line with
                # nothing to part them.
                python = not self.indent and _adjacent_python(written, keys[index + 1])
                if not bare and not python and self.at("missing_comma"):
                    if not self.indent:
                        parts.append(" ")
                else:
                    parts.append(",")
                    if self.at("comment"):
                        parts.append(self.comment().rstrip("\n").rstrip(" "))
        if self.at("trailing_comma"):
            parts.append(",")
        parts.append(self.gap(depth))
        parts.append("]" if self.at("wrong_closer") else "}")
        return "".join(parts)

    def key(self, key: str) -> str:
        identifier = _IDENTIFIER.fullmatch(key) is not None and key not in ("True", "False", "None")
        if identifier and self.at("unquoted_key"):
            return key
        return self.string(key, member=False, key=True)

    def arr(self, value: list[Any], depth: int) -> str:
        if not value:
            if self.at("empty_wrong_closer"):
                return "[}"
            return "[]"
        parts = ["["]
        written = [self.value(item, depth + 1) for item in value]
        for index, item in enumerate(written):
            parts.append(self.gap(depth + 1))
            if self.at("comment"):
                parts.append(self.comment().lstrip(" ") + (self.tab * (depth + 1) * self.indent))
            parts.append(item)
            if index == len(written) - 1:
                break
            nxt = written[index + 1]
            numbers = _is_number(item) and _is_number(nxt)
            if numbers and not self.indent and self.at("numbers_a_space_apart"):
                parts.append(" ")
                continue
            if self.at("doubled_comma_in_array"):
                parts.append(",,")
                continue
            # On one line a comma may be missing only between strings, objects and arrays, and
            # not between two strings one of which is single-quoted (Python's concatenation).
            inline_ok = _parted(item) and _parted(nxt) and not _adjacent_python(item, nxt)
            if (self.indent or inline_ok) and self.at("missing_comma"):
                parts.append("" if self.indent else " ")
                continue
            parts.append(",")
        if self.at("trailing_comma"):
            parts.append(",")
        parts.append(self.gap(depth))
        parts.append("}" if self.at("wrong_closer") else "]")
        return "".join(parts)


def _single(text: str) -> str:
    body = json.dumps(text, ensure_ascii=False)[1:-1].replace('\\"', '"').replace("'", "\\'")
    return "'" + body + "'"


def _splits_escape(text: str, cut: int) -> bool:
    return False if cut <= 0 else text[cut - 1] == "\\"


def _near_literal(word: str) -> bool:
    """Whether ``word`` is one slip from a literal (``ture``, ``nul``): never written bare."""
    lower = word.lower()
    for literal in ("true", "false", "null", "none"):
        if lower[:1] != literal[0]:
            continue
        if (
            len(lower) == len(literal)
            and sum(a != b for a, b in zip(lower, literal, strict=True)) <= 2
        ):
            return True
        if abs(len(lower) - len(literal)) == 1:
            shorter, longer = sorted((lower, literal), key=len)
            if any(longer[:i] + longer[i + 1 :] == shorter for i in range(len(longer))):
                return True
    return False


def _is_bare(written: str) -> bool:
    return bool(written) and (written[0].isalpha() and written not in ("True", "False", "None"))


def _is_number(written: str) -> bool:
    return bool(written) and (written[0].isdigit() or written[0] == "-")


def _parted(written: str) -> bool:
    return bool(written) and written[0] in "\"'“{[" and "+" not in written


def _adjacent_python(left: str, right: str) -> bool:
    """Whether two strings side by side would be one to Python (one of them single-quoted)."""
    if not left or not right:
        return False
    return left[-1] in "\"'”" and right[0] in "\"'“" and "'" in (left[-1], right[0])


def _missing_colon_fits(written: str) -> bool:
    return bool(written) and written[0] in "\"'{[-0123456789" and " + " not in written


def _special(family: str, rng: random.Random) -> _Special:
    """A member value written in a family's own way, and what it means (None: nothing)."""
    if family == "inner_quotes":
        words = [rng.choice(("she", "said", "the", "best", "one", "today")) for _ in range(3)]
        meant = f'{words[0]} "{words[1]}" {words[2]}'
        return _Special(family, meant, '"' + meant + '"')
    if family == "unquoted_timestamp":
        stamp = rng.choice(_TIMESTAMPS)
        return _Special(family, stamp, stamp)
    if family == "windows_path":
        path = rng.choice(_PATHS)
        return _Special(family, path, '"' + path + '"')
    if family == "constructor_call":
        return _Special(
            family, None, rng.choice(("new NumberInt(5)", 'ObjectId("5f1")', "Date.now()"))
        )
    if family == "plus_in_open_string":
        return _Special(family, None, '"abc + "def"')
    if family == "comment_in_open_string":
        return _Special(family, None, '"abc // note\n')
    if family == "known_and_unknown_escapes":
        return _Special(family, None, '"C:\\new\\x"')
    raise AssertionError(family)


_MEMBER_SPECIALS = (
    "inner_quotes",
    "unquoted_timestamp",
    "windows_path",
    "constructor_call",
    "plus_in_open_string",
    "comment_in_open_string",
    "known_and_unknown_escapes",
)


def _place_special(value: Any, special: _Special, rng: random.Random) -> Any:
    """``value`` with ``special`` as the value of a new member of some object in it (the top
    value is an object or array; an array gets an object item holding it)."""
    objects: list[dict[str, Any]] = []
    arrays: list[list[Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            objects.append(node)
            for item in node.values():
                walk(item)
        elif isinstance(node, list):
            arrays.append(node)
            for item in node:
                walk(item)

    walk(value)
    if objects:
        # First in its object: a string whose quotes are in doubt is not followed by the
        # object's closing bracket (``"a "b" c"},{} ""``: it might run on through it).
        target = rng.choice(objects)
        rest = dict(target)
        target.clear()
        target["s_" + special.family] = special
        target.update(rest)
    else:
        rng.choice(arrays).append({"s_" + special.family: special})
    return value


def _meant(value: Any) -> Any:
    if isinstance(value, _Special):
        return value.value
    if isinstance(value, dict):
        return {key: _meant(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_meant(item) for item in value]
    return value


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def write(value: Any, families: tuple[str, ...], seed: int) -> Case:
    """``value`` (an object or array) written by a model, with one slip of each family.

    A family that finds no place for its slip in this value is left out of the case's
    ``families`` (a trailing comma needs a non-empty container...).
    """
    assert isinstance(value, (dict, list))
    rng = random.Random(seed)
    if "truncated" in families:
        # ``{"a": [1, 2}`` is a wrong bracket or a cut text: the two slips together make a text
        # with a clear one-slip reading, so a cut is not combined with a wrong bracket.
        families = tuple(family for family in families if family != "wrong_closer")
    tree = _copy(value)
    for family in families:
        if family in _MEMBER_SPECIALS:
            tree = _place_special(tree, _special(family, rng), rng)
    style = (
        rng.random() < 0.5,
        rng.random() < 0.2,
        "'" if rng.random() < 0.2 else '"',
        "\r\n" if rng.random() < 0.2 else "\n",
        rng.choice(("  ", "    ", "\t")),
    )
    slip_families = [f for f in families if f not in _WRAPPERS and f not in _MEMBER_SPECIALS]
    slip_families += [f for f in families if f in _MEMBER_SPECIALS]
    # First count the places each slip may go, then write again with one place chosen for each.
    counter = _Writer(random.Random(seed), {}, *style)
    counter.value(tree, 0)
    slips: dict[str, set[int]] = {}
    for family in slip_families:
        if family in _MEMBER_SPECIALS:
            continue
        places = counter.seen[family]
        if places:
            slips[family] = {rng.randrange(places) for _ in range(rng.choice((1, 1, 2)))}
    writer = _Writer(random.Random(seed), slips, *style)
    body = writer.value(tree, 0)
    applied = [f for f in slip_families if f in _MEMBER_SPECIALS] + sorted(writer.applied)
    if "truncated" in families:
        applied.append("truncated")
        cut = rng.randrange(1, max(len(body) - 1, 2))
        body = body[:cut]
    text = body
    if "fence" in families:
        text = "```json\n" + text + "\n```"
        applied.append("fence")
    if "prose" in families:
        text = rng.choice(_PREFIXES) + "\n" + text + "\n" + rng.choice(_SUFFIXES)
        applied.append("prose")
    if "reasoning" in families:
        text = rng.choice(_REASONING) + text
        applied.append("reasoning")
    if "bom" in families:
        text = "\ufeff" + text
        applied.append("bom")
    means = not any(f in NEVER and f != "truncated" for f in applied)
    order = {f: i for i, f in enumerate(FAMILIES)}
    unique = tuple(sorted(set(applied), key=order.__getitem__))
    return Case(text, _meant(tree), unique, means)


def random_value(rng: random.Random, depth: int = 0) -> Any:
    """A JSON value for the recall script (the tests draw theirs from hypothesis)."""
    roll = rng.random()
    if depth == 0 or (depth < 3 and roll < 0.35):
        size = rng.randrange(0 if depth else 1, 4)
        if rng.random() < 0.6:
            return {_random_key(rng): random_value(rng, depth + 1) for _ in range(size)}
        if rng.random() < 0.3:
            return [rng.randrange(-99, 100) for _ in range(size + 1)]  # numbers side by side
        return [random_value(rng, depth + 1) for _ in range(size)]
    roll = rng.random()
    if roll < 0.45:
        return _random_text(rng)
    if roll < 0.6:
        return rng.randrange(-(10**6), 10**6)
    if roll < 0.75:
        return rng.choice((0.5, -1.25, 1e-7, 6.02e23, 3.0, -0.0, 1e16))
    return rng.choice((True, False, None))


def _random_key(rng: random.Random) -> str:
    return rng.choice(("id", "name", "city", "note", "x_1", "Größe", "a b", "type", "k"))


def _random_text(rng: random.Random) -> str:
    return rng.choice(
        (
            "New York",
            "ok",
            "hello world",
            "été",
            "a\nb",
            'say "x"',
            "it's",
            "tab\there",
            "",
            "日本語",
            "back\\slash",
        )
    )


def recall(
    samples: int, seed: int = 0, misses: list[tuple[Case, Any]] | None = None
) -> dict[str, tuple[int, int, int]]:
    """Per family: (cases, recovered or refused as due, wrong values), over ``samples`` cases per
    family, each with up to two other recoverable families beside it. Cases not as due are
    appended to ``misses`` with what the reader made of them."""
    from scriptorium.validate.json.strict import parse_lenient

    rng = random.Random(seed)
    table: dict[str, tuple[int, int, int]] = {}
    for family in FAMILIES:
        total = good = wrong = 0
        for _ in range(samples):
            value = random_value(rng)
            others = tuple(rng.sample(RECOVERABLE, rng.randrange(0, 3)))
            case = write(value, (family, *others), rng.randrange(2**32))
            if family not in case.families:
                continue
            outcome = parse_lenient(case.text)
            total += 1
            if case.due(outcome.ok, outcome.value):
                good += 1
                continue
            if outcome.ok:
                wrong += 1
            if misses is not None:
                misses.append((case, outcome.value if outcome.ok else outcome.issues))
        table[family] = (total, good, wrong)
    return table


def same_value(left: Any, right: Any) -> bool:
    """Equal as JSON: key order aside, ``1`` and ``1.0`` differ, so do ``1`` and ``True``."""
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


def main(argv: list[str]) -> int:
    samples = int(argv[0]) if argv else 300
    table = recall(samples)
    print(f"{'family':28} {'kind':11} {'cases':>6} {'as due':>7} {'%':>6} {'wrong':>6}")
    for family, (total, good, wrong) in table.items():
        kind = "recoverable" if family in RECOVERABLE else "never"
        share = 100 * good / total if total else 0.0
        print(f"{family:28} {kind:11} {total:6} {good:7} {share:6.1f} {wrong:6}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
