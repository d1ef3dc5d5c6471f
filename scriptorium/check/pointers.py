"""Whether an output schema can hold a value at a JSON Pointer: what ``check`` asks of a test
case's ``pointer`` and ``value`` expectations, so a test that can never pass is caught before it
runs.

The walk is deliberately generous: it follows ``properties``, ``additionalProperties``,
``prefixItems``, ``items``, local ``$ref`` and the combinators, and says "cannot hold" only where
the schema plainly forbids the place (``false``, ``additionalProperties: false``, a ``type`` with
no object or array, an index past ``maxItems``) or the expected value (its JSON type, ``enum``,
``const``). Anything it cannot decide (pattern properties, conditionals, other files) holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["value_paths", "why_cannot_hold"]

_MAX_DEPTH = 32
# Keywords whose effect on a path this walk does not work out: with them, anything holds.
_UNDECIDED = ("patternProperties", "if", "dependentSchemas", "unevaluatedProperties", "not")
_NONE = object()


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list | tuple) else "object"


def _types(schema: dict[str, Any]) -> set[str] | None:
    declared = schema.get("type")
    if isinstance(declared, str):
        declared = [declared]
    if not isinstance(declared, list):
        return None
    types = {t for t in declared if isinstance(t, str)}
    if "number" in types:
        types.add("integer")
    return types


def _declared(schema: dict[str, Any]) -> str:
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else list(declared or [])
    return " or ".join(str(n) for n in names)


def _local(root: Any, ref: str) -> Any:
    """The target of a local ``$ref`` (``#/$defs/x``), or :data:`_NONE`."""
    if not ref.startswith("#"):
        return _NONE
    target = root
    for raw in ref[1:].split("/")[1:] if ref != "#" else []:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and token in target:
            target = target[token]
        else:
            return _NONE
    return target


def _index(token: str) -> int | None:
    if token.isdigit() and (token == "0" or not token.startswith("0")):
        return int(token)
    return None


def _leaf(schema: Any, value: Any) -> str | None:
    if not isinstance(schema, dict) or value is _NONE:
        return None
    types = _types(schema)
    kind = _json_type(value)
    if types is not None and kind not in types:
        return f"the schema says {_declared(schema)} there, the case expects {kind}"
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        return "the expected value is not one of the schema's enum there"
    if "const" in schema and schema["const"] != value:
        return "the schema's const there is another value"
    return None


def why_cannot_hold(
    schema: Any, tokens: list[str], value: Any = _NONE, *, root: Any = None, depth: int = 0
) -> str | None:
    """Why ``schema`` can hold nothing at ``tokens`` (the pointer's unescaped tokens), or no
    ``value`` there when one is given; None when it can (or when the walk cannot tell)."""
    root = schema if root is None else root
    if schema is False:
        return "the schema allows nothing there"
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _local(root, ref)
        if target is _NONE:
            return None
        found = why_cannot_hold(target, tokens, value, root=root, depth=depth + 1)
        if found is not None:
            return found
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and branches:
            reasons = [
                why_cannot_hold(b, tokens, value, root=root, depth=depth + 1) for b in branches
            ]
            if all(r is not None for r in reasons):
                return reasons[0]
    for branch in schema.get("allOf") or []:
        found = why_cannot_hold(branch, tokens, value, root=root, depth=depth + 1)
        if found is not None:
            return found
    if any(keyword in schema for keyword in _UNDECIDED):
        return None
    if not tokens:
        return _leaf(schema, value)
    return _step(schema, tokens, value, root, depth)


def _step(
    schema: dict[str, Any], tokens: list[str], value: Any, root: Any, depth: int
) -> str | None:
    token, rest = tokens[0], tokens[1:]
    allowed = schema["enum"] if isinstance(schema.get("enum"), list) else None
    if "const" in schema:
        allowed = [schema["const"]]
    if allowed is not None and not any(isinstance(v, dict | list) for v in allowed):
        return f"the schema allows only fixed scalar values where /{token} needs an object or array"
    types = _types(schema)
    can_object = types is None or "object" in types
    can_array = types is None or "array" in types
    if not can_object and not can_array:
        return f"the schema says {_declared(schema)} where /{token} needs an object or array"
    reasons = []
    if can_object:
        properties = schema.get("properties")
        if isinstance(properties, dict) and token in properties:
            sub = properties[token]
        else:
            sub = schema.get("additionalProperties", True)
        if sub is False:
            reasons.append(f"the schema allows no property {token!r} there")
        else:
            found = why_cannot_hold(sub, rest, value, root=root, depth=depth + 1)
            if found is None:
                return None
            reasons.append(found)
    index = _index(token)
    if can_array and index is not None:
        prefix = schema.get("prefixItems")
        items = schema.get("items", True)
        if isinstance(items, list):  # draft 7 and earlier: a list of items is the prefix
            prefix, items = items, schema.get("additionalItems", True)
        sub = prefix[index] if isinstance(prefix, list) and index < len(prefix) else items
        max_items = schema.get("maxItems")
        if isinstance(max_items, int) and index >= max_items:
            reasons.append(f"the schema allows at most {max_items} items there")
        elif sub is False:
            reasons.append(f"the schema allows no item {index} there")
        else:
            found = why_cannot_hold(sub, rest, value, root=root, depth=depth + 1)
            if found is None:
                return None
            reasons.append(found)
    elif can_array and not can_object:
        reasons.append(f"{token!r} is no array index")
    return reasons[0] if reasons else None


def value_paths(value: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[list[str], Any]]:
    """Every scalar (and empty container) of an expected ``value`` with its path, as a deep
    subset compares them: object keys and array positions."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from value_paths(item, (*prefix, str(key)))
    elif isinstance(value, list | tuple) and value:
        for position, item in enumerate(value):
            yield from value_paths(item, (*prefix, str(position)))
    else:
        yield list(prefix), value
