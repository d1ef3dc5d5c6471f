"""The slip families of the third recovery round, one corruption at a time: the value or a refusal.

For any JSON value ``v`` and one corruption of a family, applied to ``json.dumps(v)``: the lenient
parser returns ``v`` or is invalid, with and without a schema of ``v``'s shape. Some families are
recoveries (a tuple, ``.25``, backtick quotes...), some are the shapes that used to give a wrong
value (a brace closing the object early, doubled quotes, ``ture``...): for those the only safe
outcomes are ``v`` (when the schema picks it) or a refusal.

And whatever the corruptions (one or two of any family, old or new, or a text cut short), a value
returned never has more or fewer members or items than ``v``, at any depth.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from scriptorium.validate.json.strict import parse_lenient
from tests.property.test_lenient_corruptions import CORRUPTIONS, Token, schema_for, tokens

Corruption = Callable[[str, list[Token], Any], list[str]]

_WORD = re.compile(r"[A-Za-z]{1,8}")
_WORDS = re.compile(r"[A-Za-z](?:[A-Za-z ]{0,12}[A-Za-z])?")
_LITERAL_WORDS = {"true", "false", "null", "True", "False", "None", "NaN", "Infinity", "inf", "nan"}
_KEY_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]*[1-9])?")


def _decoded(token: Token) -> str:
    value: str = json.loads(token.text)
    return value


def _splice(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def _significant(toks: list[Token]) -> list[Token]:
    return [t for t in toks if t.kind != "ws"]


def _brackets(toks: list[Token], opener: str, closer: str) -> list[tuple[Token, Token]]:
    """Each container's opening and closing token, for containers of one kind."""
    pairs: list[tuple[Token, Token]] = []
    stack: list[Token] = []
    for token in toks:
        if token.kind != "punct":
            continue
        if token.text in "[{":
            stack.append(token)
        elif token.text in "]}":
            start = stack.pop()
            if start.text == opener and token.text == closer:
                pairs.append((start, token))
    return pairs


def _tuples(text: str, toks: list[Token], value: Any) -> list[str]:
    out: list[str] = []
    for start, end in _brackets(toks, "[", "]"):
        out.append(_splice(_splice(text, end.start, end.end, ")"), start.start, start.end, "("))
        out.append(_splice(text, end.start, end.end, ")"))
    return out


def _numbers(text: str, toks: list[Token], value: Any) -> list[str]:
    out: list[str] = []
    for t in toks:
        if t.kind != "num":
            continue
        raw = t.text
        forms = []
        if re.fullmatch(r"-?0\.[0-9]+", raw):
            forms.append(raw.replace("0.", ".", 1))
        if re.fullmatch(r"-?[0-9]+\.0", raw):
            forms.append(raw[:-1])
        if re.fullmatch(r"-?[1-9][0-9]{3,}", raw):
            digits = raw.lstrip("-")
            grouped = f"{int(digits):_}"
            forms.append(("-" if raw.startswith("-") else "") + grouped)
        if not raw.startswith("-"):
            forms.append("+" + raw)
        out.extend(_splice(text, t.start, t.end, form) for form in forms)
    return out


def _thousands(text: str, toks: list[Token], value: Any) -> list[str]:
    out: list[str] = []
    for t in toks:
        match = re.fullmatch(r"(-?)([1-9][0-9]{3,})(\.[0-9]+)", t.text) if t.kind == "num" else None
        if match is not None:
            grouped = f"{int(match.group(2)):,}"
            out.append(_splice(text, t.start, t.end, match.group(1) + grouped + match.group(3)))
    return out


def _member_strings(toks: list[Token]) -> list[Token]:
    significant = _significant(toks)
    return [
        t for prev, t in itertools.pairwise(significant) if t.kind == "str" and prev.text == ":"
    ]


def _unquoted_rich(text: str, toks: list[Token], value: Any) -> list[str]:
    """Member values with a bracket group or over two lines, written without quotes."""
    out: list[str] = []
    for t in _member_strings(toks):
        content = _decoded(t)
        if re.fullmatch(r"[a-z]+\{[a-z ]+\}", content) or re.fullmatch(
            r"[a-z]+(?: [a-z]+)*\n  [a-z]+(?: [a-z]+)*", content
        ):
            words = {w for w in re.split(r"[\s{}]+", content) if w}
            if not words & _LITERAL_WORDS:
                out.append(_splice(text, t.start, t.end, content))
    return out


def _escaped(text: str, toks: list[Token], value: Any) -> list[str]:
    if not isinstance(value, (dict, list)) or '"' not in text:
        return []
    return [json.dumps(text)[1:-1]]


def _number_keys(text: str, toks: list[Token], value: Any) -> list[str]:
    return [
        _splice(text, t.start, t.end, _decoded(t))
        for t in toks
        if t.kind == "key" and _KEY_NUMBER.fullmatch(_decoded(t))
    ]


def _requote(opener: str, closer: str, forbidden: str, *, alone: bool = True) -> Corruption:
    """Strings in other quotes; with ``alone`` false, not a string that is the whole text."""

    def corrupt(text: str, toks: list[Token], value: Any) -> list[str]:
        return [
            _splice(text, t.start, t.end, opener + t.text[1:-1] + closer)
            for t in toks
            if t.kind in ("str", "key")
            and not set(forbidden) & set(t.text[1:-1])
            and (alone or isinstance(value, (dict, list)))
        ]

    return corrupt


def _fullwidth(text: str, toks: list[Token], value: Any) -> list[str]:
    swap = {",": "，", ":": "："}
    return [_splice(text, t.start, t.end, swap[t.text]) for t in toks if t.text in swap]


def _doubled_colon(text: str, toks: list[Token], value: Any) -> list[str]:
    return [_splice(text, t.start, t.end, "::") for t in toks if t.text == ":"]


def _missing_closing_quote(text: str, toks: list[Token], value: Any) -> list[str]:
    """``"x", "y"`` -> ``"x, "y"``: a string's closing quote dropped before a comma."""
    significant = _significant(toks)
    out: list[str] = []
    for t, comma, nxt in zip(significant, significant[1:], significant[2:], strict=False):
        if (
            t.kind == "str"
            and comma.text == ","
            and nxt.kind in ("str", "key")
            and '"' not in t.text[1:-1]
        ):
            out.append(_splice(text, t.end - 1, t.end, ""))
    return out


def _python_prefix(text: str, toks: list[Token], value: Any) -> list[str]:
    out: list[str] = []
    for t in toks:
        if t.kind != "str" or "'" in t.text:
            continue
        body = t.text[1:-1]
        out.append(_splice(text, t.start, t.end, "u'" + body + "'"))
        content = _decoded(t)
        if "\\" in content and re.fullmatch(r"[^'\n\r\\]*(?:\\[^'\n\r\\][^'\n\r\\]*)*", content):
            out.append(_splice(text, t.start, t.end, "r'" + content + "'"))
    return out


def _plus_joined(text: str, toks: list[Token], value: Any) -> list[str]:
    out: list[str] = []
    for t in toks:
        body = t.text[1:-1]
        if t.kind == "str" and len(body) >= 2 and "\\" not in body[:2]:
            out.append(_splice(text, t.start, t.end, f'"{body[0]}" + "{body[1:]}"'))
    return out


def _early_brace(text: str, toks: list[Token], value: Any) -> list[str]:
    """``{"a": 1, "b": 2}`` -> ``{"a": 1}, "b": 2}``: the object closed before its last members."""
    if not isinstance(value, dict) or len(value) < 2:
        return []
    significant = _significant(toks)
    depth = 0
    out: list[str] = []
    for t in significant:
        if t.kind == "punct" and t.text in "[{":
            depth += 1
        elif t.kind == "punct" and t.text in "]}":
            depth -= 1
        elif t.text == "," and depth == 1:
            out.append(_splice(text, t.start, t.start, "}"))
    return out


def _doubled_quotes(text: str, toks: list[Token], value: Any) -> list[str]:
    strings = [t for t in toks if t.kind in ("str", "key")]
    # (An empty string doubled is ``""""``, which opens a triple-quoted string to Python.)
    if not strings or any(
        len(t.text) == 2 or '"' in t.text[1:-1] or "\\" in t.text for t in strings
    ):
        return []
    return [text.replace('"', '""')]


def _misspelled(text: str, toks: list[Token], value: Any) -> list[str]:
    slips = {"true": "ture", "false": "flase", "null": "nul"}
    return [_splice(text, t.start, t.end, slips[t.text]) for t in toks if t.kind == "lit"]


def _missing_opening_quote(text: str, toks: list[Token], value: Any) -> list[str]:
    """``["a", "b"]`` -> ``["a" b"]``: a comma and an opening quote dropped between items."""
    significant = _significant(toks)
    out: list[str] = []
    for t, comma, nxt in zip(significant, significant[1:], significant[2:], strict=False):
        # (Before an empty string the slip would leave a lone quote, not a word missing one.)
        if t.kind == "str" and comma.text == "," and nxt.kind == "str" and nxt.text != '""':
            out.append(_splice(text, comma.start, nxt.start + 1, " "))
    return out


def _over_escaped(text: str, toks: list[Token], value: Any) -> list[str]:
    return [
        _splice(text, t.start, t.end, t.text[0] + t.text[1:-1].replace('\\"', '\\\\"') + '"')
        for t in toks
        if t.kind in ("str", "key") and '\\"' in t.text and "\\\\" not in t.text
    ]


def _implicit_concatenation(text: str, toks: list[Token], value: Any) -> list[str]:
    out: list[str] = []
    for t in toks:
        body = t.text[1:-1]
        if t.kind == "str" and len(body) >= 2 and "'" not in body and "\\" not in body[:2]:
            out.append(_splice(text, t.start, t.end, f"'{body[0]}' '{body[1:]}'"))
    return out


FAMILIES: dict[str, Corruption] = {
    "python_tuple": _tuples,
    "nonstandard_number": _numbers,
    "thousands_separator": _thousands,
    "unquoted_value_rich": _unquoted_rich,
    "escaped_json": _escaped,
    "non_string_key": _number_keys,
    # (Backticks around a whole text are Markdown's code span: `{}` is the object, by design.)
    "backtick_quotes": _requote("`", "`", "`$", alone=False),
    "corner_brackets": _requote("「", "」", "「」『』"),
    "fullwidth_punctuation": _fullwidth,
    "doubled_colon": _doubled_colon,
    "missing_closing_quote": _missing_closing_quote,
    "python_string_prefix": _python_prefix,
    "joined_strings": _plus_joined,
    # the shapes that used to give a wrong value
    "early_brace": _early_brace,
    "doubled_quotes": _doubled_quotes,
    "misspelled_literal": _misspelled,
    "missing_opening_quote": _missing_opening_quote,
    "over_escaped_quote": _over_escaped,
    "implicit_concatenation": _implicit_concatenation,
}

words = st.from_regex(_WORDS, fullmatch=True)
rich_strings = (
    st.text(max_size=8)
    | words
    | st.from_regex(r"[a-z]{1,5}\{[a-z ]{1,6}\}", fullmatch=True)
    | st.builds(lambda a, b: f"{a}\n  {b}", st.from_regex(r"[a-z]{1,6}", fullmatch=True), words)
    | st.builds(lambda a, b: f'{a} "{b}" end', words, st.from_regex(r"[a-z]{1,5}", fullmatch=True))
)
rich_keys = (
    st.text(max_size=5)
    | st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)
    | st.from_regex(r"-?(?:0|[1-9][0-9]{0,3})(?:\.[0-9]{0,2}[1-9])?", fullmatch=True)
)
rich_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**7), max_value=10**7)
    | st.floats(allow_nan=False, allow_infinity=False, min_value=-1e7, max_value=1e7)
    | st.sampled_from([0.25, -0.5, 3.0, 12500.25, -2000.5])
    | rich_strings
)
rich_values: st.SearchStrategy[Any] = st.recursive(
    rich_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(rich_keys, children, max_size=4)
    ),
    max_leaves=10,
)

SETTINGS = settings(max_examples=300, deadline=None)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _shape(value: Any) -> Any:
    """Counts of members and items at every depth (values and key spellings left out)."""
    if isinstance(value, dict):
        return ("object", len(value), sorted((_shape(v) for v in value.values()), key=repr))
    if isinstance(value, list):
        return ("array", len(value), [_shape(v) for v in value])
    return "scalar"


def _both_ways(sample: str, value: Any) -> list[Any]:
    """What the parser returns for ``sample`` without and with a schema of ``value``'s shape
    (only the outcomes that are values). A slip that made other valid JSON (``[6,100.0]``) is no
    slip to a parser: valid JSON passes unchanged, so such samples are left out."""
    try:
        json.loads(sample)
    except ValueError:
        pass
    else:
        return []
    check = Draft202012Validator(schema_for(value)).is_valid
    outcomes = [parse_lenient(sample), parse_lenient(sample, schema_check=check)]
    return [outcome.value for outcome in outcomes if outcome.ok]


@SETTINGS
@given(rich_values, st.sampled_from(sorted(FAMILIES)), st.booleans(), st.data())
def test_one_slip_of_a_family_gives_the_value_or_a_refusal(
    value: Any, family: str, indent: bool, data: st.DataObject
) -> None:
    """json.dumps(v) with one slip of the family: v or invalid, with and without a schema."""
    text = json.dumps(value, indent=2 if indent else None, ensure_ascii=data.draw(st.booleans()))
    corrupted = FAMILIES[family](text, tokens(text), value)
    if not corrupted:
        return
    sample = data.draw(st.sampled_from(corrupted))
    for returned in _both_ways(sample, value):
        assert _canonical(returned) == _canonical(value), (family, sample, returned)


def test_every_family_applies_and_its_recoveries_recover() -> None:
    """Not vacuous: each family has sites in a typical value, and the recoveries give it back."""
    value = {
        "name": "Ada",
        "note": "see{ch two}",
        "quote": 'she said "hi" end',
        "tags": ["x", "yz"],
        "n": [1, 2000, 0.25, 3.0],
        "total": 12500.25,
        "ok": True,
        "none": None,
        "7": "seven",
        "path": "a\\b",
    }
    plain = {"name": "Ada", "ok": True, "tags": ["x", "yz"]}
    recoveries = set(list(FAMILIES)[:13])
    for name, corrupt in FAMILIES.items():
        sites = [
            (sample, v)
            for v in (value, plain)
            for sample in corrupt(json.dumps(v), tokens(json.dumps(v)), v)
        ]
        assert sites, name
        if name in recoveries:
            assert [s for s, v in sites if parse_lenient(s).value == v], name


def _merged(original: str, first: str, second: str) -> str | None:
    """Both edits at once, when they touch separate parts of ``original`` (two slips at one
    spot, like a missing quote and the comma after it, leave a text no reader can undo)."""
    spans = []
    for edited in (first, second):
        head = 0
        while head < min(len(original), len(edited)) and original[head] == edited[head]:
            head += 1
        tail = 0
        while (
            tail < min(len(original), len(edited)) - head
            and original[len(original) - 1 - tail] == edited[len(edited) - 1 - tail]
        ):
            tail += 1
        spans.append((head, len(original) - tail, edited[head : len(edited) - tail]))
    (a_start, a_end, a_new), (b_start, b_end, b_new) = sorted(spans)
    if a_end + 2 > b_start:
        return None
    return original[:a_start] + a_new + original[a_end:b_start] + b_new + original[b_end:]


ALL_SLIPS: dict[str, Corruption] = {**CORRUPTIONS, **FAMILIES}


@SETTINGS
@given(
    rich_values,
    st.lists(st.sampled_from(sorted(ALL_SLIPS)), min_size=1, max_size=2),
    st.booleans(),
    st.data(),
)
def test_no_fix_drops_or_adds_a_member_or_an_item(
    value: Any, families: list[str], cut: bool, data: st.DataObject
) -> None:
    """One or two slips of any families, the text cut short or not: a value returned has as many
    members and items as v, at every depth."""
    if not isinstance(value, (dict, list)):
        return
    text = json.dumps(value)
    edits = []
    for family in families:
        corrupted = ALL_SLIPS[family](text, tokens(text), value)
        if not corrupted:
            return
        edits.append(data.draw(st.sampled_from(corrupted)))
    sample: str | None = edits[0] if len(edits) == 1 else _merged(text, edits[0], edits[1])
    if sample is None or len(sample) < 2:
        return
    if cut and not {"early_brace", "wrong_bracket"} & set(families):
        # (A closing bracket put in, then the text cut right after it, is a complete value no
        # reader can tell from the answer: two faults at once, out of this property's reach.)
        sample = sample[: data.draw(st.integers(min_value=1, max_value=len(sample) - 1))]
    for returned in _both_ways(sample, value):
        assert _shape(returned) == _shape(value), (families, sample, returned)
