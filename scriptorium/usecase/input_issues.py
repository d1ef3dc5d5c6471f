"""How an input that fails the prompt's ``inputs`` schema is described in an error: where, what
the schema expected there (its type or limit, read from the schema) and the kind of value given,
never the failing value itself (an input may be a key pasted into the wrong field)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scriptorium.redaction import redact_secret_shapes

__all__ = ["input_issue"]

# Keywords whose messages name properties (from the schema, or the input's own keys), never an
# input value; every other keyword's message may quote the value that failed it.
_NAMING_KEYWORDS = frozenset({"required", "additionalProperties", "unevaluatedProperties"})


def input_issue(path: str, keyword: str, message: str, schema: Any, inputs: Any) -> str:
    """One inputs problem for an error message: where, what the schema expected there (its type
    or limit, read from the schema) and the kind of value given, never the failing value itself
    (an input may be a key pasted into the wrong field)."""
    where = path or "/"
    if keyword in _NAMING_KEYWORDS:
        return f"{where}: {redact_secret_shapes(message)}"
    if not keyword:
        return f"{where}: invalid"
    expected = _expectation(_subschema(schema, path), keyword)
    if expected is None:
        return f"{where}: fails {keyword!r}"
    given = _json_type(_pointed(inputs, path))
    got = f", got {given}" if keyword == "type" and given else ""
    return f"{where}: expected {expected}{got} (fails {keyword!r})"


_BOUNDS = {
    "minimum": "at least {}",
    "maximum": "at most {}",
    "exclusiveMinimum": "more than {}",
    "exclusiveMaximum": "less than {}",
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
    "minProperties": "at least {} properties",
    "maxProperties": "at most {} properties",
    "multipleOf": "a multiple of {}",
    "format": "format {!r}",
    "pattern": "text matching {!r}",
}


def _expectation(schema: Any, keyword: str) -> str | None:
    """What ``schema`` asks by ``keyword``, in words (``type`` -> ``integer``, ``maximum`` ->
    ``at most 5``); None when the schema does not say it plainly there."""
    if not isinstance(schema, Mapping) or keyword not in schema:
        return None
    value = schema[keyword]
    if keyword == "type":
        names = [value] if isinstance(value, str) else value
        if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
            return " or ".join(names)
        return None
    if keyword in ("enum", "const"):
        choices = value if keyword == "enum" else [value]
        if isinstance(choices, list) and choices:
            shown = ", ".join(json.dumps(c, ensure_ascii=False)[:40] for c in choices[:8])
            more = ", ..." if len(choices) > 8 else ""
            return f"one of {shown}{more}" if keyword == "enum" else shown
        return None
    template = _BOUNDS.get(keyword)
    return None if template is None else template.format(value)


def _segments(path: str) -> list[str]:
    return [s.replace("~1", "/").replace("~0", "~") for s in path.split("/")[1:]] if path else []


def _subschema(schema: Any, path: str) -> Any:
    """The schema that applies at instance ``path``, following ``properties`` and ``items`` (the
    plain cases; None where a composition or reference decides)."""
    for segment in _segments(path):
        if not isinstance(schema, Mapping):
            return None
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and segment in properties:
            schema = properties[segment]
        elif segment.isdigit() and isinstance(schema.get("items"), Mapping):
            schema = schema["items"]
        else:
            return None
    return schema


def _pointed(value: Any, path: str) -> Any:
    for segment in _segments(path):
        if isinstance(value, Mapping):
            value = value.get(segment)
        elif isinstance(value, list | tuple) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return None
    return value


def _json_type(value: Any) -> str | None:
    """The JSON type name of ``value`` (never the value)."""
    if isinstance(value, bool):
        return "boolean"
    for python, name in ((str, "string"), (int, "integer"), (float, "number")):
        if isinstance(value, python):
            return name
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return "null" if value is None else None
