"""Structured-output plumbing for the Anthropic adapter: which strategy a model gets, the JSON
Schema reduced to what the Messages API's ``output_config`` accepts, and prompt instructions.

Pure functions (no SDK import), so they are cheap to test. The reduced schema only steers the model:
the full schema is still validated locally by the runner, so dropping a bound here loosens what the
API enforces, never what scriptorium accepts.
"""

from __future__ import annotations

import copy
import re
import threading
from typing import Any, Literal

from scriptorium.llm.anthropic.model_ids import base_model
from scriptorium.llm.model import StructuredOutput

__all__ = [
    "Strategy",
    "choose_strategy",
    "reduce_schema",
    "reduce_schema_cached",
    "supports_native",
    "tool_name",
]

Strategy = Literal["native", "tool", "prompt"]

# Keywords the API's grammar compiler accepts (per Anthropic's structured-output documentation);
# everything else is dropped from the copy sent to the API.
_KEPT_ANYWHERE = ("description", "title", "enum", "const", "$ref")
_STRING_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
_JSON_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})

# Structured outputs (output_config.format) arrived with these model generations.
_NATIVE_FROM = {"opus": (4, 1), "sonnet": (4, 5), "haiku": (4, 5)}
_MODEL_NAME = re.compile(r"^claude-(opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?:$|-|@)")


def supports_native(model: str) -> bool:
    """Whether ``model`` (or the Anthropic model a platform's id stands for) is known to accept
    ``output_config`` JSON schemas."""
    match = _MODEL_NAME.match(base_model(model.strip()).lower())
    if match is None:
        return False
    family, major, minor = match.group(1), int(match.group(2)), int(match.group(3) or 0)
    return (major, minor) >= _NATIVE_FROM[family]


def choose_strategy(spec: StructuredOutput, model: str, *, thinking: bool = False) -> Strategy:
    """The strategy actually used: ``auto`` becomes native where supported, else tool (else
    prompt when the model thinks: the API forces no tool while it does); a request for plain
    JSON (no schema) is always met with prompt instructions."""
    if spec.format == "json" or not isinstance(spec.schema_, dict):
        return "prompt"
    if spec.strategy != "auto":
        return spec.strategy
    narrowed = any(d.startswith("narrowed:") for d in reduce_schema_cached(spec.schema_)[1])
    if supports_native(model) and not narrowed:
        return "native"
    return "prompt" if thinking else "tool"


def tool_name(name: str) -> str:
    """``name`` made acceptable as a tool name (letters, digits, ``_``, ``-``; at most 64)."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]
    return cleaned or "output"


_REDUCED_LIMIT = 32
# (a snapshot of a schema, what reducing it gave), most recently used last.
_reduced: list[tuple[dict[str, Any], tuple[dict[str, Any], list[str]]]] = []
_reduced_lock = threading.Lock()


def reduce_schema_cached(schema: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """:func:`reduce_schema`, remembered for the last few schemas by equality (each request
    carries its own copy of the same schema; reducing it again on every call showed in the
    profile, comparing it is a fraction of that). The reduced schema is shared: read-only."""
    for snapshot, result in reversed(_reduced):
        if snapshot == schema:
            return result[0], list(result[1])
    result = reduce_schema(schema)
    with _reduced_lock:
        if len(_reduced) >= _REDUCED_LIMIT:
            del _reduced[0]
        _reduced.append((copy.deepcopy(schema), result))
    return result[0], list(result[1])


def reduce_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The schema as the API accepts it, and the keywords that had to go.

    Bounds, patterns, unknown formats and the like are dropped (loosening: the local validator still
    enforces them). ``oneOf`` becomes ``anyOf``; a list of types becomes an ``anyOf``; every object
    gets ``additionalProperties: false``. The returned list names what was dropped; an entry
    starting with ``narrowed:`` means the reduced schema rejects values the full one allows (a map
    type with schema-valued ``additionalProperties``), which makes ``auto`` prefer the tool route.
    """
    dropped: set[str] = set()
    reduced = _reduce(schema, dropped, "#")
    narrowed = sorted(d for d in dropped if d.startswith("narrowed:"))
    return reduced, narrowed + sorted(d for d in dropped if not d.startswith("narrowed:"))


def _reduce(node: Any, dropped: set[str], where: str) -> dict[str, Any]:
    if not isinstance(node, dict):
        # ``true``/``false`` subschemas have no equivalent; an empty schema is the closest.
        dropped.add(f"boolean subschema at {where}")
        return {}
    out: dict[str, Any] = {}
    for key in _KEPT_ANYWHERE:
        if key in node:
            out[key] = node[key]
    for defs_key in ("$defs", "definitions"):
        defs = node.get(defs_key)
        if isinstance(defs, dict):
            out[defs_key] = {
                k: _reduce(v, dropped, f"{where}/{defs_key}/{k}") for k, v in defs.items()
            }
    for combinator, target in (("anyOf", "anyOf"), ("oneOf", "anyOf"), ("allOf", "allOf")):
        branches = node.get(combinator)
        if isinstance(branches, list):
            out[target] = [
                _reduce(b, dropped, f"{where}/{combinator}/{i}") for i, b in enumerate(branches)
            ]
    kind = node.get("type")
    if isinstance(kind, list):
        # ["string", "null"] -> anyOf of single-typed copies, each reduced as its own type.
        variants = [{**node, "type": k} for k in kind if k in _JSON_TYPES]
        for key in ("type", "$defs", "definitions", "anyOf", "oneOf", "allOf"):
            out.pop(key, None)
        out["anyOf"] = [_reduce(v, dropped, where) for v in variants]
        return out
    if isinstance(kind, str):
        out["type"] = kind
    if kind == "object" or "properties" in node:
        _reduce_object(node, out, dropped, where)
    if kind == "array" or "items" in node:
        _reduce_array(node, out, dropped, where)
    if kind == "string" and "format" in node:
        if node["format"] in _STRING_FORMATS:
            out["format"] = node["format"]
        else:
            dropped.add("format")
    handled = {
        *_KEPT_ANYWHERE,
        "$defs",
        "definitions",
        "anyOf",
        "oneOf",
        "allOf",
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "format",
        "$schema",
        "$id",
        "$comment",
        "default",
        "examples",
    }
    if "patternProperties" in node:  # keys the reduced object (additionalProperties false) forbids
        dropped.add(f"narrowed: patternProperties at {where}")
    dropped.update(k for k in node if k not in handled)
    return out


def _reduce_object(
    node: dict[str, Any], out: dict[str, Any], dropped: set[str], where: str
) -> None:
    properties = node.get("properties")
    if isinstance(properties, dict):
        out["properties"] = {
            k: _reduce(v, dropped, f"{where}/properties/{k}") for k, v in properties.items()
        }
    if isinstance(node.get("required"), list):
        out["required"] = list(node["required"])
    extra = node.get("additionalProperties")
    if extra not in (None, False):
        dropped.add(f"narrowed: additionalProperties at {where}")
    out["additionalProperties"] = False


def _reduce_array(node: dict[str, Any], out: dict[str, Any], dropped: set[str], where: str) -> None:
    if "items" in node:
        out["items"] = _reduce(node["items"], dropped, f"{where}/items")
    if node.get("minItems") in (0, 1):
        out["minItems"] = node["minItems"]
    elif "minItems" in node:
        dropped.add("minItems")
