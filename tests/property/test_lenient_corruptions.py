"""One slip at a time: the lenient parser undoes it, or refuses; it never returns another value.

For any JSON value ``v`` and any single corruption from the list of slips the lenient parser
recovers, applied to ``json.dumps(v)``: without a schema the parser returns ``v`` or is invalid;
with a schema generated from ``v``'s shape (types, keys, lengths; no values) it returns ``v``.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from scriptorium.validate.json.strict import parse_lenient

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]|true|false|null|-?[0-9][0-9.eE+\-]*|\s+')
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORDS = re.compile(r"[A-Za-z](?:[A-Za-z ]{0,20}[A-Za-z])?")
# Words that are values in their own right when unquoted: a corruption cannot make them strings.
_LITERAL_WORDS = {"true", "false", "null", "True", "False", "None", "NaN", "Infinity", "inf", "nan"}
_SMART = set("“”‘’")
# Characters that, next to a quote, make it read as a delimiter rather than part of the text.
_DELIMITING = set(",:{}[]#/\"'") | _SMART


@dataclass(frozen=True)
class Token:
    kind: str  # "str", "key", "punct", "lit", "num", "ws"
    start: int
    end: int
    text: str


def tokens(text: str) -> list[Token]:
    found: list[Token] = []
    for match in _TOKEN.finditer(text):
        raw = match.group()
        kind = (
            "str"
            if raw[0] == '"'
            else "ws"
            if raw.isspace()
            else "punct"
            if raw in "{}[],:"
            else "lit"
            if raw in ("true", "false", "null")
            else "num"
        )
        found.append(Token(kind, match.start(), match.end(), raw))
    assert "".join(t.text for t in found) == text
    significant = [t for t in found if t.kind != "ws"]
    keys = {
        id(t)
        for t, after in itertools.pairwise(significant)
        if t.kind == "str" and after.text == ":"
    }
    return [Token("key", t.start, t.end, t.text) if id(t) in keys else t for t in found]


def _content(token: Token) -> str:
    decoded: str = json.loads(token.text)
    return decoded


def _previous(toks: list[Token], index: int) -> Token | None:
    for token in reversed(toks[:index]):
        if token.kind != "ws":
            return token
    return None


def _splice(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


# Each corruption: (text, tokens) -> the corrupted texts it can make (one per site).
Corruption = Callable[[str, list[Token], Any], list[str]]


def _bom(text: str, toks: list[Token], value: Any) -> list[str]:
    return ["\ufeff" + text]


def _fence(text: str, toks: list[Token], value: Any) -> list[str]:
    return [f"```json\n{text}\n```"]


def _prose(text: str, toks: list[Token], value: Any) -> list[str]:
    if not isinstance(value, (dict, list)):
        return []  # a scalar in prose is not a candidate, by design
    return [f"Here is the result:\n{text}\nHope this helps.", f"Sure. {text}"]


def _reasoning(text: str, toks: list[Token], value: Any) -> list[str]:
    draft = '<thinking>\nA first try: {"draft": true, "items": [1, 2]}\n</thinking>\n'
    return [draft + text]


def _trailing_comma(text: str, toks: list[Token], value: Any) -> list[str]:
    out = []
    for i, t in enumerate(toks):
        prev = _previous(toks, i)
        if t.text in "]}" and t.kind == "punct" and prev is not None and prev.text not in "[{":
            out.append(_splice(text, prev.end, prev.end, ","))
    return out


def _leading_comma(text: str, toks: list[Token], value: Any) -> list[str]:
    return [_splice(text, t.end, t.end, ",") for t in toks if t.text == "{" and t.kind == "punct"]


def _comment(text: str, toks: list[Token], value: Any) -> list[str]:
    out = []
    notes = (" /* note */ ", " // note\n", " # note\n")
    for n, t in enumerate(t for t in toks if t.kind == "punct" and t.text in "{[,:"):
        out.append(_splice(text, t.end, t.end, notes[n % 3]))
    return out


def _requote(opener: str, closer: str, forbidden: set[str]) -> Corruption:
    def corrupt(text: str, toks: list[Token], value: Any) -> list[str]:
        out = []
        for t in toks:
            if t.kind in ("str", "key") and not forbidden & set(_content(t)):
                out.append(_splice(text, t.start, t.end, opener + t.text[1:-1] + closer))
        return out

    return corrupt


def _python_literal(text: str, toks: list[Token], value: Any) -> list[str]:
    spelled = {"true": "True", "false": "False", "null": "None"}
    return [_splice(text, t.start, t.end, spelled[t.text]) for t in toks if t.kind == "lit"]


def _unquoted_key(text: str, toks: list[Token], value: Any) -> list[str]:
    return [
        _splice(text, t.start, t.end, _content(t))
        for t in toks
        if t.kind == "key"
        and _IDENTIFIER.fullmatch(_content(t))
        and _content(t) not in ("True", "False", "None")
    ]


def _unquoted_value(text: str, toks: list[Token], value: Any) -> list[str]:
    out = []
    for i, t in enumerate(toks):
        prev = _previous(toks, i)
        if t.kind == "str" and prev is not None and prev.text == ":":
            word = _content(t)
            if _WORDS.fullmatch(word) and word not in _LITERAL_WORDS:
                out.append(_splice(text, t.start, t.end, word))
    return out


def _missing_comma(text: str, toks: list[Token], value: Any) -> list[str]:
    return [_splice(text, t.start, t.end, "") for t in toks if t.text == "," and t.kind == "punct"]


def _wrong_bracket(text: str, toks: list[Token], value: Any) -> list[str]:
    swap = {"]": "}", "}": "]"}
    return [
        _splice(text, t.start, t.end, swap[t.text])
        for t in toks
        if t.kind == "punct" and t.text in swap
    ]


def _inner_quotes(text: str, toks: list[Token], value: Any) -> list[str]:
    """``"she said \\"hi\\""`` -> ``"she said "hi""``, where the words around each quote leave
    one reading (no delimiter next to it, no two quotes together)."""
    out = []
    for t in toks:
        raw = t.text[1:-1]
        if t.kind not in ("str", "key") or '\\"' not in raw or "\\\\" in raw:
            continue
        bare = raw.replace('\\"', '"')
        if '""' in bare or bare == '"':  # '"""' would open a triple-quoted string
            continue
        if all(_quote_reads_as_text(bare, i) for i, c in enumerate(bare) if c == '"'):
            out.append(_splice(text, t.start + 1, t.end - 1, bare))
    return out


def _quote_reads_as_text(content: str, index: int) -> bool:
    left = content[:index].rstrip(" ")
    right = content[index + 1 :].lstrip(" ")
    return (not left or left[-1] not in _DELIMITING) and (not right or right[0] not in _DELIMITING)


def _mixed_quote(text: str, toks: list[Token], value: Any) -> list[str]:
    return [
        _splice(text, t.end - 1, t.end, "”")
        for t in toks
        if t.kind in ("str", "key") and not _SMART & set(_content(t))
    ]


CORRUPTIONS: dict[str, Corruption] = {
    "bom": _bom,
    "code_fence": _fence,
    "prose": _prose,
    "reasoning": _reasoning,
    "trailing_comma": _trailing_comma,
    "leading_comma": _leading_comma,
    "comment": _comment,
    "single_quotes": _requote("'", "'", {"'"}),
    "smart_quotes": _requote("“", "”", _SMART),
    "triple_quotes": _requote('"""', '"""', {'"'}),
    "python_literal": _python_literal,
    "unquoted_key": _unquoted_key,
    "unquoted_value": _unquoted_value,
    "missing_comma": _missing_comma,
    "wrong_bracket": _wrong_bracket,
    "inner_quotes": _inner_quotes,
    "mixed_quotes": _mixed_quote,
}


def schema_for(value: Any) -> dict[str, Any]:
    """A schema of ``value``'s shape: its types, keys and lengths, none of its scalar values."""
    if isinstance(value, dict):
        return {
            "type": "object",
            "properties": {k: schema_for(v) for k, v in value.items()},
            "required": list(value),
            "additionalProperties": False,
        }
    if isinstance(value, list):
        return {
            "type": "array",
            "prefixItems": [schema_for(v) for v in value],
            "items": False,
            "minItems": len(value),
        }
    if isinstance(value, bool):
        return {"type": "boolean"}
    if value is None:
        return {"type": "null"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    return {"type": "string"}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


words = st.from_regex(_WORDS, fullmatch=True)
quoted_speech = st.builds(
    lambda a, b, c: f'{a} "{b}" {c}', words, st.from_regex(r"[a-z]{1,6}", fullmatch=True), words
)
strings = st.text(max_size=10) | words | quoted_speech
keys = st.text(max_size=6) | st.from_regex(_IDENTIFIER, fullmatch=True).filter(lambda k: len(k) < 9)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**6), max_value=10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | strings
)
values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=12,
)

SETTINGS = settings(max_examples=250, deadline=None)


@SETTINGS
@given(values, st.booleans(), st.sampled_from(sorted(CORRUPTIONS)), st.data())
def test_one_corruption_is_undone_or_refused_never_misread(
    value: Any, indent: bool, name: str, data: st.DataObject
) -> None:
    """json.dumps(v) with one slip: v or invalid without a schema; v with a schema of v's shape."""
    text = json.dumps(value, indent=2 if indent else None, ensure_ascii=data.draw(st.booleans()))
    corrupted = CORRUPTIONS[name](text, tokens(text), value)
    if not corrupted:
        return
    sample = data.draw(st.sampled_from(corrupted))
    plain = parse_lenient(sample)
    if plain.ok:
        assert _canonical(plain.value) == _canonical(value), (name, sample)
    check = Draft202012Validator(schema_for(value)).is_valid
    guided = parse_lenient(sample, schema_check=check)
    assert guided.ok, (name, sample, guided.issues)
    assert _canonical(guided.value) == _canonical(value), (name, sample)


def test_every_corruption_applies_to_a_typical_value() -> None:
    """The corruption list is not vacuous: each one has sites in a representative value."""
    value = {
        "name": "Ada",
        "quote": 'she said "hi" twice',
        "tags": ["x", "y"],
        "n": [1, 2],
        "ok": True,
        "none": None,
    }
    text = json.dumps(value)
    for name, corrupt in CORRUPTIONS.items():
        assert corrupt(text, tokens(text), value), name


# ``{"a": [1, 2}`` is recovered as ``{"a": [1, 2]}`` (one bracket is missing), and it is also what
# ``{"a": [1, 2}, "b": 3}`` cut short looks like: two faults at once, out of this property's reach.
CUTTABLE = sorted(set(CORRUPTIONS) - {"wrong_bracket"})


@SETTINGS
@given(values, st.sampled_from(CUTTABLE), st.data())
def test_a_corrupted_text_cut_short_is_never_read_as_another_value(
    value: Any, name: str, data: st.DataObject
) -> None:
    """Cut anywhere, a container with one slip is refused, or (the cut fell in prose after it)
    is v. (A number cut short is another number: scalars are left out.)"""
    if not isinstance(value, (dict, list)):
        return
    text = json.dumps(value)
    corrupted = CORRUPTIONS[name](text, tokens(text), value)
    if not corrupted:
        return
    sample = data.draw(st.sampled_from(corrupted))
    if len(sample) < 2:
        return
    cut = sample[: data.draw(st.integers(min_value=1, max_value=len(sample) - 1))]
    outcome = parse_lenient(cut, schema_check=Draft202012Validator(schema_for(value)).is_valid)
    if outcome.ok:
        assert _canonical(outcome.value) == _canonical(value), (name, cut)
