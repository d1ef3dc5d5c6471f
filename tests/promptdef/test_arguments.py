"""Text arguments (``-i key=value``, MCP prompt arguments) read by the type the prompt's ``inputs``
schema declares for the key."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.promptdef.arguments import guess_value, split_input, typed_inputs, typed_value

SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "n": {"type": "integer"},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "maybe": {"type": ["integer", "string"]},
        "colour": {"enum": ["red", "123"]},
        "free": {},
    },
}


@pytest.mark.parametrize(
    ("pair", "expected"),
    [
        (("id", "123"), "123"),
        (("id", "true"), "true"),
        (("id", '"quoted"'), '"quoted"'),
        (("n", "3"), 3),
        (("n", "3.0"), 3.0),
        (("n", "three"), "three"),
        (("ratio", "0.5"), 0.5),
        (("flag", "false"), False),
        (("tags", '["a", "b"]'), ["a", "b"]),
        (("maybe", "7"), 7),
        (("maybe", "seven"), "seven"),
        (("maybe", "[1]"), "[1]"),
        (("colour", "123"), "123"),
        (("free", "3"), 3),
        (("free", "hello"), "hello"),
        (("undeclared", "[1, 2]"), [1, 2]),
    ],
)
def test_each_key_is_read_as_its_schema_says(pair: tuple[str, str], expected: Any) -> None:
    assert typed_inputs([pair], SCHEMA) == {pair[0]: expected}
    assert type(typed_inputs([pair], SCHEMA)[pair[0]]) is type(expected)


@settings(max_examples=80, deadline=None)
@given(raw=st.text())
def test_a_string_input_is_always_the_text_typed(raw: str) -> None:
    assert typed_value(raw, {"type": "string"}) == raw


def _refuse(name: str) -> Any:
    raise ValueError(name)


@settings(max_examples=80, deadline=None)
@given(raw=st.text())
def test_without_a_schema_the_value_is_json_or_the_text(raw: str) -> None:
    value = typed_inputs([("k", raw)], None)["k"]
    try:
        expected = json.loads(raw, parse_constant=_refuse)
    except ValueError:
        expected = raw
    assert value == expected
    assert guess_value(raw) == expected


def test_split_keeps_everything_after_the_first_equals_sign() -> None:
    assert split_input("q=a=b") == ("q", "a=b")
    with pytest.raises(ValueError, match="KEY=VALUE"):
        split_input("novalue")
