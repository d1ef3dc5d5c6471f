"""Properties of the JSON parsers over arbitrary text and arbitrary JSON values."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.validate.json.strict import parse_lenient, parse_strict

FAST = settings(max_examples=150, deadline=None)

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=20,
)
containers = st.one_of(
    st.lists(json_values, min_size=1, max_size=5),
    st.dictionaries(st.text(max_size=8), json_values, min_size=1, max_size=5),
)
# Text drawn mostly from the characters the tolerant reader cares about, to reach its corners.
jsonish_text = st.text(alphabet="{}[]\",:'`/*\n \t0123456789.-eE+truefalsnNTFx“”‘’\\\ufeff#u")


@FAST
@given(st.text() | jsonish_text)
def test_neither_parser_raises_on_arbitrary_text(text: str) -> None:
    """Any text yields an outcome; a failed one carries at least one issue."""
    for outcome in (parse_strict(text), parse_lenient(text)):
        assert outcome.ok or outcome.issues


@FAST
@given(st.text(), json_values, st.text())
def test_lenient_never_raises_on_text_around_json(before: str, value: Any, after: str) -> None:
    """Prose of any kind around a serialized value never makes the parser raise."""
    outcome = parse_lenient(before + json.dumps(value) + after)
    assert outcome.ok or outcome.issues


@FAST
@given(json_values, st.booleans())
def test_valid_json_round_trips_with_no_fixes(value: Any, indent: bool) -> None:
    """For any JSON value v, lenient(json.dumps(v)) is v, with no fixes, like strict."""
    text = json.dumps(value, indent=2 if indent else None)
    lenient, strict = parse_lenient(text), parse_strict(text)
    assert lenient.ok
    assert strict.ok
    assert lenient.value == value == strict.value
    assert lenient.fixes == ()


@FAST
@given(containers, st.data())
def test_a_strict_prefix_of_an_object_or_array_is_never_accepted(
    value: Any, data: st.DataObject
) -> None:
    """Cutting a serialized container anywhere never yields a value: truncation is an issue."""
    text = json.dumps(value)
    cut = data.draw(st.integers(min_value=1, max_value=len(text) - 1))
    for outcome in (parse_lenient(text[:cut]), parse_strict(text[:cut])):
        assert not outcome.ok


@FAST
@given(json_values)
def test_a_fenced_value_is_recovered_exactly(value: Any) -> None:
    """A value inside a json code fence comes back unchanged."""
    outcome = parse_lenient(f"Here you go:\n```json\n{json.dumps(value, indent=2)}\n```\n")
    assert outcome.ok
    assert outcome.value == value
