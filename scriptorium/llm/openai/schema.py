"""JSON Schemas reduced to what OpenAI's strict structured outputs accept.

Strict mode (``response_format`` ``json_schema`` with ``strict: true``, and strict tools) constrains
decoding to the schema, but only for a subset of JSON Schema: an object at the root, every object
closed (``additionalProperties: false``) with every property listed in ``required``, and a limited
set of keywords. :func:`strict_schema` rewrites a schema into that subset so that everything the
reduced schema accepts is still a candidate for the full one:

- objects are closed and every property becomes required (this *narrows*: the model must fill
  optional fields, and whatever it produces still validates against the original);
- keywords strict mode rejects (``minLength``, ``allOf``, ``not``, ``patternProperties``, ...) are
  dropped, and ``oneOf`` becomes ``anyOf`` (this *widens*: the full schema is still validated
  locally by scriptorium, so nothing invalid slips through unreported).

A schema that cannot be made strict without changing what it means (a non-object root, an open map
``{"type": "object"}`` without ``properties``, a boolean subschema) returns ``None``; the adapter
then sends it with ``strict: false``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["STRICT_KEYWORDS", "strict_schema"]

#: Keywords strict mode accepts (OpenAI "Structured Outputs", supported schemas).
STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "definitions",
        "description",
        "title",
        "pattern",
        "format",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    }
)

_STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
_SCHEMA_MAPS = ("$defs", "definitions")


class _NotStrict(Exception):
    """The schema has no strict equivalent."""


def strict_schema(schema: Any) -> dict[str, Any] | None:
    """``schema`` reduced for strict mode, or ``None`` when it cannot be (see the module doc)."""
    if not isinstance(schema, dict) or not _is_object(schema):
        return None
    try:
        return _reduce(schema)
    except _NotStrict:
        return None


def _is_object(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (kind is None and "properties" in node)


def _reduce(node: Any) -> dict[str, Any]:
    if not isinstance(node, dict):  # true/false subschemas have no strict form
        raise _NotStrict
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "oneOf":
            key = "anyOf"
        if key not in STRICT_KEYWORDS:
            continue
        if key == "format" and value not in _STRICT_FORMATS:
            continue
        if key == "properties":
            out[key] = {name: _reduce(sub) for name, sub in value.items()}
        elif key == "items":
            if isinstance(value, list):  # draft-4 tuple form; no strict equivalent
                raise _NotStrict
            out[key] = _reduce(value)
        elif key == "anyOf":
            out[key] = [_reduce(sub) for sub in value]
        elif key in _SCHEMA_MAPS:
            out[key] = {name: _reduce(sub) for name, sub in value.items()}
        elif key in ("required", "additionalProperties"):
            continue  # rewritten below from properties
        else:
            out[key] = value
    types = node.get("type")
    is_object = types == "object" or (isinstance(types, list) and "object" in types)
    if is_object or "properties" in node:
        properties = out.get("properties")
        extra = node.get("additionalProperties", True)
        if not properties and extra is not False:
            raise _NotStrict  # an open map: strict mode could only ever produce {}
        out["properties"] = properties or {}
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    return out
