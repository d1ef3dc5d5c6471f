"""Text arguments read the way the prompt's ``inputs`` schema declares them: one rule for every
entry point that receives inputs as strings (the command line's ``-i key=value``, an MCP client's
prompt arguments).

A shell (or an MCP client) gives text. Where the schema says what a key is, that decides: a ``string`` property takes
``-i id=123`` as the text ``123``; an ``integer`` one takes ``-i n=3`` as the number 3. Only where
the schema says nothing (no schema, an undeclared key, a property without ``type``) is the value
guessed: JSON when it parses as JSON, else the text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["guess_value", "split_input", "typed_inputs", "typed_value"]

# JSON Schema type names and the Python types a parsed JSON value has for each.
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "object": (dict,),
    "array": (list,),
}


def split_input(text: str) -> tuple[str, str]:
    """``key=value`` -> ``(key, value)``, the value kept as typed (``ValueError`` without ``=``)."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise ValueError(f"expected KEY=VALUE, got {text!r}")
    return key, raw


def _no_constant(name: str) -> Any:
    # NaN and Infinity are not JSON data (inputs could not be hashed): they stay text.
    raise ValueError(name)


def guess_value(raw: str) -> Any:
    """The JSON value of ``raw`` when it parses as JSON, else ``raw`` itself."""
    try:
        return json.loads(raw, parse_constant=_no_constant)
    except ValueError:
        return raw


def _declared_types(schema: Any) -> set[str] | None:
    """The JSON types a property schema allows, or None when it does not say."""
    if not isinstance(schema, Mapping):
        return None
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list) and all(isinstance(t, str) for t in declared):
        return set(declared)
    choices = schema.get("enum")
    if "const" in schema:
        choices = [schema["const"]]
    if isinstance(choices, list) and choices:
        kinds = {"string" if isinstance(c, str) else "other" for c in choices}
        if kinds == {"string"}:
            return {"string"}
    return None


def _matches(value: Any, types: set[str]) -> bool:
    for name in types - {"string"}:
        python = _JSON_TYPES.get(name)
        if python is None:
            continue
        if isinstance(value, bool) and name != "boolean":
            continue
        if name == "integer" and isinstance(value, float):
            if value.is_integer():
                return True
            continue
        if isinstance(value, python):
            return True
    return False


def typed_value(raw: str, schema: Any) -> Any:
    """``raw`` read as the property ``schema`` declares.

    - only ``string`` allowed: the text, whatever it looks like;
    - other types allowed: the JSON value when it parses to one of them; else the text when
      ``string`` is allowed too; else the JSON value or the text, for validation to report;
    - nothing declared: :func:`guess_value`.
    """
    types = _declared_types(schema)
    if types is None:
        return guess_value(raw)
    if types == {"string"}:
        return raw
    try:
        parsed = json.loads(raw, parse_constant=_no_constant)
    except ValueError:
        return raw
    if _matches(parsed, types):
        return parsed
    return raw if "string" in types else parsed


def typed_inputs(pairs: Iterable[tuple[str, str]], schema: Any) -> dict[str, Any]:
    """``-i`` pairs as a dict of values typed by the prompt's ``inputs`` schema (may be None)."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        properties = {}
    return {key: typed_value(raw, properties.get(key)) for key, raw in pairs}
