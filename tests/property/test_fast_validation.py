"""The optional ``jsonschema-rs`` acceptor never changes a verdict: whatever it accepts,
``jsonschema`` accepts too, and SchemaValidator's verdicts equal plain ``jsonschema``'s."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.validate.model import OutputContract
from scriptorium.validate.schema import SchemaValidator
from scriptorium.validate.schema.fast import fast_acceptor

pytest.importorskip("jsonschema_rs")

_NAMES = ("a", "b", "c")
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.text(max_size=6),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from((*_NAMES, "z")), inner, max_size=4),
    ),
    max_leaves=12,
)
_small = st.integers(min_value=0, max_value=4)
_bound = st.one_of(st.integers(-10, 10), st.floats(-10, 10, allow_nan=False))
_leaves = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "integer", "number", "boolean", "null", "array"])}
    ),
    st.fixed_dictionaries({"enum": st.lists(_scalars, min_size=1, max_size=4)}),
    st.fixed_dictionaries({"const": _scalars}),
    st.fixed_dictionaries(
        {"type": st.just("string")}, optional={"minLength": _small, "maxLength": _small}
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["integer", "number"])},
        optional={
            "minimum": _bound,
            "maximum": _bound,
            "exclusiveMinimum": _bound,
            "exclusiveMaximum": _bound,
        },
    ),
)


def _object(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "type": st.just("object"),
            "properties": st.dictionaries(st.sampled_from(_NAMES), children, max_size=3),
        },
        optional={
            "required": st.lists(st.sampled_from(_NAMES), unique=True, max_size=3),
            "additionalProperties": st.one_of(st.booleans(), children),
            "minProperties": _small,
            "maxProperties": _small,
        },
    )


_schemas = st.recursive(
    _leaves,
    lambda children: st.one_of(
        _object(children),
        st.fixed_dictionaries(
            {"type": st.just("array"), "items": children},
            optional={"minItems": _small, "maxItems": _small, "uniqueItems": st.booleans()},
        ),
        st.fixed_dictionaries({"anyOf": st.lists(children, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"allOf": st.lists(children, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"oneOf": st.lists(children, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"not": children}),
    ),
    max_leaves=6,
)


def _contract(validator: SchemaValidator, schema: dict[str, Any]) -> OutputContract:
    loaded = validator.load_schema(schema)
    return OutputContract(
        format="json_schema", schema_=loaded.document, schema_hash=loaded.hash, parse="strict"
    )


@settings(max_examples=200, deadline=None)
@given(schema=_schemas, value=_values)
def test_the_fast_acceptor_never_accepts_what_jsonschema_refuses(
    schema: dict[str, Any], value: Any
) -> None:
    """Soundness of the fast path, and SchemaValidator agreeing with plain jsonschema."""
    text = json.dumps(value)
    parsed = json.loads(text)  # what the validators see: the output as parsed from the text
    reference = jsonschema.Draft202012Validator(schema).is_valid(parsed)
    accept = fast_acceptor(schema, referenced=False)
    assert accept is not None
    if accept(parsed):
        assert reference, "jsonschema-rs accepted a value jsonschema refuses"
    verdict = SchemaValidator().validate(text, _contract(SchemaValidator(), schema))
    assert verdict.valid is reference


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "format": "date"},
        {"type": "string", "pattern": "^a"},
        {"type": "object", "patternProperties": {"^x": {"type": "integer"}}},
        {"type": "number", "multipleOf": 0.1},
        {"$schema": "https://example.com/my-dialect", "type": "string"},
    ],
)
def test_no_fast_path_where_the_two_could_disagree(schema: dict[str, Any]) -> None:
    """Formats, regexes, multipleOf and unknown dialects stay with jsonschema alone."""
    assert fast_acceptor(schema, referenced=False) is None


def test_a_property_named_like_a_keyword_keeps_the_fast_path() -> None:
    """A property called "format" holds a schema, not a format name."""
    schema = {"type": "object", "properties": {"format": {"type": "string"}}}
    accept = fast_acceptor(schema, referenced=False)
    assert accept is not None
    assert accept({"format": "x"})
    assert not accept({"format": 1})


def test_referenced_schemas_have_no_fast_path() -> None:
    """Schemas compiled with other files are validated by jsonschema alone."""
    assert fast_acceptor({"type": "object"}, referenced=True) is None


def test_multiple_of_keeps_jsonschemas_verdict() -> None:
    """0.3 is not a multiple of 0.1 for jsonschema (float division): the verdict stays invalid."""
    validator = SchemaValidator()
    verdict = validator.validate("0.3", _contract(validator, {"multipleOf": 0.1}))
    assert not verdict.valid
    assert verdict.issues[0].keyword == "multipleOf"


def test_invalid_output_still_gets_jsonschemas_issues() -> None:
    """The fast path only accepts: a refusal is explained by jsonschema, paths and keywords."""
    validator = SchemaValidator()
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    verdict = validator.validate('{"n": "x"}', _contract(validator, schema))
    assert not verdict.valid
    assert [(i.path, i.keyword) for i in verdict.issues] == [("/n", "type")]
