"""JSON Schemas reduced to what Gemini's ``responseJsonSchema`` accepts, and which strategy a
request gets.

``responseJsonSchema`` takes a subset of JSON Schema (Google's structured-output guide, 2026-11):
``type`` (one or a list), ``properties``, ``required``, ``additionalProperties``, ``items``,
``prefixItems``, ``minItems``, ``maxItems``, ``enum``, ``const``, ``format``, ``minimum``,
``maximum``, ``anyOf``, ``oneOf``, ``$ref``, ``$defs``, ``$id``, ``$anchor``, ``title`` and
``description``. Everything else (string lengths and patterns, ``allOf``, ``not``,
``patternProperties``, conditionals, ...) is dropped from the copy sent, and the dropped keywords
are reported; the full schema is still validated locally, so a dropped bound loosens what the
API steers towards, never what scriptorium accepts. A boolean subschema has no form there: it
becomes ``{}`` (``true``) and is reported (``false`` too: nothing could match it anyway).
"""

from __future__ import annotations

import threading
from typing import Any, Literal

from scriptorium.hashing import canonical_json
from scriptorium.llm.model import StructuredOutput

__all__ = ["KEPT_KEYWORDS", "Strategy", "gemini_strategy", "reduce_schema", "reduce_schema_cached"]

Strategy = Literal["native", "tool", "prompt"]

#: Keywords ``responseJsonSchema`` accepts; their values are kept as they are, except where a
#: value holds subschemas (reduced in turn).
KEPT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "enum",
        "const",
        "format",
        "minimum",
        "maximum",
        "anyOf",
        "oneOf",
        "$ref",
        "$defs",
        "$id",
        "$anchor",
        "title",
        "description",
        "propertyOrdering",
    }
)
#: Annotations for schema tools, not constraints: left out without a word.
_SILENT = frozenset({"$schema", "$comment"})
_MAPS = ("properties", "$defs")
_LISTS = ("anyOf", "oneOf", "prefixItems")


def gemini_strategy(structured: StructuredOutput | None) -> Strategy | None:
    """The strategy used: ``auto`` is ``native`` (a JSON answer under ``responseMimeType``, with
    the schema when there is one); ``tool`` (one function the model must call, its arguments the
    output) needs an object schema, else it is ``native`` too; ``prompt`` stays."""
    if structured is None:
        return None
    if structured.strategy == "tool":
        schema = structured.schema_
        is_object = isinstance(schema, dict) and (
            schema.get("type") == "object" or "properties" in schema
        )
        return "tool" if structured.format == "json_schema" and is_object else "native"
    return "prompt" if structured.strategy == "prompt" else "native"


def reduce_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``schema`` as ``responseJsonSchema`` takes it, and what was dropped (sorted; an entry names
    a keyword, or what was replaced and where)."""
    dropped: set[str] = set()
    reduced = _reduce(schema, dropped, "#")
    return reduced, sorted(dropped)


def _reduce(node: Any, dropped: set[str], where: str) -> dict[str, Any]:
    if isinstance(node, bool):
        dropped.add(f"boolean subschema at {where}")
        return {}
    if not isinstance(node, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key not in KEPT_KEYWORDS:
            if key not in _SILENT:
                dropped.add(key)
        elif key in _MAPS and isinstance(value, dict):
            out[key] = {n: _reduce(v, dropped, f"{where}/{key}/{n}") for n, v in value.items()}
        elif key in _LISTS and isinstance(value, list):
            out[key] = [_reduce(v, dropped, f"{where}/{key}/{i}") for i, v in enumerate(value)]
        elif key == "items" and isinstance(value, dict | bool):
            out[key] = _reduce(value, dropped, f"{where}/items")
        elif key == "additionalProperties" and isinstance(value, dict):
            out[key] = _reduce(value, dropped, f"{where}/additionalProperties")
        else:
            out[key] = value
    return out


_cache: dict[bytes, tuple[dict[str, Any], list[str]]] = {}
_cache_lock = threading.Lock()
_CACHE_SIZE = 256


def reduce_schema_cached(schema: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """:func:`reduce_schema`, remembered by the schema's canonical JSON (one prompt's schema is
    reduced once, not on every call). The results are shared: never change them."""
    key = canonical_json(schema)
    found = _cache.get(key)
    if found is None:
        found = reduce_schema(schema)
        with _cache_lock:
            if len(_cache) >= _CACHE_SIZE:
                _cache.clear()
            _cache[key] = found
    return found
