"""Schemas reduced for OpenAI's strict structured outputs."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.llm.openai.schema import STRICT_KEYWORDS, strict_schema


def test_objects_are_closed_and_every_property_required() -> None:
    """Optional properties become required; additionalProperties becomes false, nested too."""
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "object", "properties": {"c": {"type": "integer"}}},
        },
        "required": ["a"],
    }
    reduced = strict_schema(schema)
    assert reduced is not None
    assert reduced["required"] == ["a", "b"]
    assert reduced["additionalProperties"] is False
    assert reduced["properties"]["b"] == {
        "type": "object",
        "properties": {"c": {"type": "integer"}},
        "required": ["c"],
        "additionalProperties": False,
    }


def test_unsupported_keywords_are_dropped_and_one_of_becomes_any_of() -> None:
    """minLength, allOf, $schema and unknown formats go; oneOf is sent as anyOf."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "s": {"type": "string", "minLength": 2, "format": "email"},
            "u": {"type": "string", "format": "uri"},
            "v": {"oneOf": [{"type": "string"}, {"type": "null"}], "allOf": [{}]},
        },
    }
    reduced = strict_schema(schema)
    assert reduced is not None
    assert "$schema" not in reduced
    assert reduced["properties"]["s"] == {"type": "string", "format": "email"}
    assert reduced["properties"]["u"] == {"type": "string"}
    assert reduced["properties"]["v"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}


def test_defs_are_reduced_and_refs_kept() -> None:
    """$defs entries get the same treatment; $ref passes through."""
    schema = {
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/P"}},
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "number"}}}},
    }
    reduced = strict_schema(schema)
    assert reduced is not None
    assert reduced["properties"]["p"] == {"$ref": "#/$defs/P"}
    assert reduced["$defs"]["P"]["required"] == ["x"]


def test_schemas_without_a_strict_form_return_none() -> None:
    """A non-object root, an open map or a boolean subschema cannot be strict."""
    assert strict_schema({"type": "array", "items": {"type": "string"}}) is None
    assert strict_schema({"type": "object"}) is None
    assert strict_schema({"type": "object", "additionalProperties": {"type": "string"}}) is None
    assert strict_schema({"type": "object", "properties": {"a": True}}) is None
    assert strict_schema(True) is None


def test_an_explicitly_empty_closed_object_is_strict() -> None:
    """{"type": "object", "additionalProperties": false} has a strict form: {}."""
    assert strict_schema({"type": "object", "additionalProperties": False}) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


_leaf = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "number", "boolean"])},
    optional={
        "minLength": st.integers(0, 5),
        "maximum": st.integers(0, 5),
        "description": st.text(max_size=5),
        "not": st.just({"type": "null"}),
    },
)


def _objects(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda props, required: {
            "type": "object",
            "properties": props,
            "required": [k for k in props if required],
            "minProperties": 0,
        },
        st.dictionaries(st.text("abc", min_size=1, max_size=3), children, min_size=1, max_size=3),
        st.booleans(),
    )


_schemas = st.recursive(_leaf, _objects, max_leaves=8)


def _walk(node: dict[str, Any]) -> None:
    assert set(node) <= STRICT_KEYWORDS
    if node.get("type") == "object":
        assert node["additionalProperties"] is False
        assert node["required"] == list(node["properties"])
        for child in node["properties"].values():
            _walk(child)


@settings(max_examples=60, deadline=None)
@given(_objects(_schemas))
def test_every_reduced_schema_uses_only_strict_keywords_and_closed_objects(
    schema: dict[str, Any],
) -> None:
    """Whatever object schema goes in, what comes out is inside the strict subset."""
    reduced = strict_schema(schema)
    assert reduced is not None
    _walk(reduced)
