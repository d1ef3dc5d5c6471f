"""PartialJSON: over any JSON value cut into any chunks, partial values only grow and end at the
value; prose before it is skipped; the bytes re-parsed stay within a constant factor of the text."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.validate.json.partial import EAGER_BYTES, PartialJSON

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=12)
)
VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
CONTAINERS = st.one_of(
    st.lists(VALUES, max_size=5), st.dictionaries(st.text(max_size=6), VALUES, max_size=5)
)


def _grows(before: Any, after: Any) -> bool:
    """``after`` extends ``before``: the same scalars, containers with more (or grown) members."""
    if isinstance(before, dict):
        return isinstance(after, dict) and all(
            k in after and _grows(v, after[k]) for k, v in before.items()
        )
    if isinstance(before, list):
        if not isinstance(after, list) or len(after) < len(before):
            return False
        return all(_grows(a, b) for a, b in zip(before, after, strict=False))
    return bool(before == after)


def _cuts(text: str, points: list[int]) -> list[str]:
    marks = sorted({p % (len(text) + 1) for p in points} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(marks) if b > a]


def _feed(chunks: list[str]) -> tuple[PartialJSON, list[Any]]:
    parser = PartialJSON()
    seen = []
    for chunk in chunks:
        if parser.feed(chunk):
            seen.append(parser.value)
    if parser.finish():
        seen.append(parser.value)
    return parser, seen


@settings(max_examples=150, deadline=None)
@given(CONTAINERS, st.lists(st.integers(0, 10_000), max_size=30), st.booleans())
def test_partials_grow_and_end_at_the_value(value: Any, points: list[int], indent: bool) -> None:
    """Each partial value extends the one before, none repeats, and the last is the value."""
    text = json.dumps(value, indent=2 if indent else None, ensure_ascii=False)
    _parser, seen = _feed(_cuts(text, points))
    assert seen, text
    assert seen[-1] == value
    for before, after in itertools.pairwise(seen):
        assert before != after
        assert _grows(before, after), (before, after)


@settings(max_examples=60, deadline=None)
@given(CONTAINERS, st.lists(st.integers(0, 10_000), max_size=10))
def test_prose_and_fences_before_the_value_are_skipped(value: Any, points: list[int]) -> None:
    """A value after prose and inside a code fence is still read."""
    text = f"Here you go:\n```json\n{json.dumps(value)}\n```\nAnything else?"
    _parser, seen = _feed(_cuts(text, points))
    assert seen[-1] == value


def test_scalar_output_is_read_at_the_end() -> None:
    """A bare number has no structure: it is read once, when the text is complete."""
    _parser, seen = _feed(["12", "34"])
    assert seen == [1234]


def test_text_jiter_cannot_read_gives_no_value() -> None:
    """Single quotes are not JSON: past the opening brace no partial value, and no error (the
    lenient parser decides at the end)."""
    _parser, seen = _feed(["{'a': ", "1, 'b': [", "2]}"])
    assert seen == [{}]
    assert PartialJSON().has_value is False


def test_reparsed_bytes_stay_linear_in_the_output() -> None:
    """A 400 KB output in 4-character chunks: each re-parse needs the text to have grown, so the
    characters parsed stay a small multiple of the output, and far fewer parses than chunks."""
    value = [{"id": i, "name": f"item {i}", "tags": ["a", "b"]} for i in range(8000)]
    text = json.dumps(value)
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
    parser, seen = _feed(chunks)
    assert seen[-1] == value
    assert parser.parsed_bytes <= 20 * len(text) + EAGER_BYTES**2
    assert parser.parses < len(chunks) // 50
