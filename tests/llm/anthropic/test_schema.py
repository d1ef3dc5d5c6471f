"""Structured-output helpers of the Anthropic adapter: schema reduction and strategy choice."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.llm.anthropic.schema import (
    choose_strategy,
    reduce_schema,
    supports_native,
    tool_name,
)
from scriptorium.llm.model import StructuredOutput
from scriptorium.llm.structured import prompt_instructions


def test_reduction_closes_objects_and_drops_bounds_everywhere() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {"P": {"type": "object", "properties": {"n": {"type": "string", "maxLength": 3}}}},
        "type": "object",
        "properties": {
            "p": {"$ref": "#/$defs/P"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 5},
            "when": {"type": "string", "format": "date-time", "pattern": "^2"},
        },
        "required": ["p"],
    }
    reduced, dropped = reduce_schema(schema)
    assert reduced == {
        "$defs": {
            "P": {
                "type": "object",
                "properties": {"n": {"type": "string"}},
                "additionalProperties": False,
            }
        },
        "type": "object",
        "properties": {
            "p": {"$ref": "#/$defs/P"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "when": {"type": "string", "format": "date-time"},
        },
        "required": ["p"],
        "additionalProperties": False,
    }
    assert dropped == ["maxItems", "maxLength", "minItems", "pattern"]


def test_one_of_and_type_lists_become_any_of() -> None:
    reduced, _ = reduce_schema(
        {"oneOf": [{"type": "integer", "minimum": 1}, {"type": ["string", "null"]}]}
    )
    assert reduced == {
        "anyOf": [
            {"type": "integer"},
            {"anyOf": [{"type": "string"}, {"type": "null"}]},
        ]
    }


def test_unsupported_string_formats_are_dropped_supported_ones_kept() -> None:
    assert reduce_schema({"type": "string", "format": "email"})[0]["format"] == "email"
    assert reduce_schema({"type": "string", "format": "phone"}) == ({"type": "string"}, ["format"])


def test_a_map_type_is_reported_as_narrowed() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    reduced, dropped = reduce_schema(schema)
    assert reduced["additionalProperties"] is False
    assert dropped[0].startswith("narrowed:")


@pytest.mark.parametrize(
    ("model", "native"),
    [
        ("claude-sonnet-4-6", True),
        ("claude-sonnet-4-5-20250929", True),
        ("claude-sonnet-4-20250514", False),
        ("claude-sonnet-4-0", False),
        ("claude-opus-4-1", True),
        ("claude-opus-4-20250514", False),
        ("claude-opus-5", True),
        ("claude-haiku-4-5", True),
        ("claude-3-5-haiku-latest", False),
        ("gpt-4o", False),
    ],
)
def test_native_support_is_known_by_model_generation(model: str, native: bool) -> None:
    assert supports_native(model) is native


def test_explicit_strategies_are_kept_and_plain_json_always_uses_the_prompt() -> None:
    schema = {"type": "object", "properties": {}}
    for strategy in ("native", "tool", "prompt"):
        spec = StructuredOutput(schema_=schema, strategy=strategy)
        assert choose_strategy(spec, "claude-3-haiku") == strategy
    assert choose_strategy(StructuredOutput(format="json", strategy="tool"), "m") == "prompt"
    assert choose_strategy(StructuredOutput(schema_=True, strategy="native"), "m") == "prompt"


def test_tool_names_are_sanitised() -> None:
    assert tool_name("person record/v2") == "person_record_v2"
    assert tool_name("") == "output"
    assert len(tool_name("x" * 200)) == 64


def test_prompt_instructions_carry_the_full_schema() -> None:
    spec = StructuredOutput(schema_={"type": "integer", "minimum": 3})
    assert '"minimum": 3' in prompt_instructions(spec)
    assert "JSON" in prompt_instructions(StructuredOutput(format="json"))


JSON_SCHEMAS = st.recursive(
    st.booleans()
    | st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["object", "array", "string", "integer", "null", "bogus"])
            | st.lists(st.sampled_from(["string", "null", "integer"]), max_size=3),
            "minimum": st.integers(),
            "format": st.sampled_from(["email", "phone", "uuid"]),
            "enum": st.lists(st.integers(), max_size=3),
            "required": st.lists(st.text(max_size=3), max_size=3),
        },
    ),
    lambda inner: st.fixed_dictionaries(
        {},
        optional={
            "type": st.just("object"),
            "properties": st.dictionaries(st.text(max_size=4), inner, max_size=3),
            "items": inner,
            "anyOf": st.lists(inner, max_size=3),
            "oneOf": st.lists(inner, max_size=3),
            "additionalProperties": inner,
            "$defs": st.dictionaries(st.text(max_size=4), inner, max_size=2),
        },
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(JSON_SCHEMAS)
def test_reduction_never_raises_and_gives_a_json_object(schema: Any) -> None:
    if not isinstance(schema, dict):
        schema = {"items": schema}
    reduced, dropped = reduce_schema(schema)
    assert isinstance(reduced, dict)
    json.dumps(reduced)
    assert all(isinstance(d, str) for d in dropped)
