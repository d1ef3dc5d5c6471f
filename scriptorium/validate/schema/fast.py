"""An optional fast acceptor for valid outputs, over ``jsonschema-rs`` (extra ``fast``).

Validating a ~700-byte output against an 11-property schema costs a compiled ``jsonschema``
validator a few hundred microseconds — as much as everything else scriptorium does per run — and
``jsonschema-rs`` a few. The fast acceptor is only ever asked "is this valid?": a yes is final, a
no (or any error) falls through to ``jsonschema``, which decides and writes the issues. So the fast
path may be stricter than ``jsonschema`` (it costs time, never a verdict) but must never be more
lenient; it is therefore not built for schemas where the two can disagree that way:

- ``format`` (scriptorium asserts a chosen set of formats; ``jsonschema-rs`` another or none),
- ``pattern`` / ``patternProperties`` (Rust and Python regular expressions differ at the edges),
- ``multipleOf`` (``jsonschema`` divides floats and refuses ``0.3`` as a multiple of ``0.1``),
- references to other files, and dialects other than drafts 4, 6, 7, 2019-09 and 2020-12.

``tests/property/test_fast_validation.py`` checks the two agree on generated schemas and values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["fast_acceptor"]

Acceptor = Callable[[Any], bool]

_DRAFTS = {
    "http://json-schema.org/draft-04/schema": "Draft4Validator",
    "http://json-schema.org/draft-06/schema": "Draft6Validator",
    "http://json-schema.org/draft-07/schema": "Draft7Validator",
    "https://json-schema.org/draft/2019-09/schema": "Draft201909Validator",
    "https://json-schema.org/draft/2020-12/schema": "Draft202012Validator",
}
_DEFAULT = "https://json-schema.org/draft/2020-12/schema"

# keyword -> the type its value has when it is that keyword (a property *named* "format" holds a
# schema object instead, and does not disable the fast path).
_UNSAFE: dict[str, type | tuple[type, ...]] = {
    "format": str,
    "pattern": str,
    "multipleOf": (int, float),
    "patternProperties": dict,
}

_unavailable = False


def _safe(document: Any) -> bool:
    stack = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                kind = _UNSAFE.get(key)
                if kind is not None and isinstance(value, kind) and not isinstance(value, bool):
                    return False
                stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return True


def fast_acceptor(document: Any, *, referenced: bool) -> Acceptor | None:
    """``value -> True`` only when ``value`` is valid against ``document`` (False: ask
    ``jsonschema``); None when ``jsonschema-rs`` is missing or the schema is outside its safe set."""
    global _unavailable
    if _unavailable or referenced or not isinstance(document, dict) or not _safe(document):
        return None
    dialect = document.get("$schema", _DEFAULT)
    name = _DRAFTS.get(dialect.rstrip("#")) if isinstance(dialect, str) else None
    if name is None:
        return None
    try:
        import jsonschema_rs
    except ImportError:
        _unavailable = True
        return None
    try:
        validator = getattr(jsonschema_rs, name)(document)
    except Exception:
        return None  # whatever it cannot compile, jsonschema alone handles
    is_valid = validator.is_valid

    def accept(value: Any) -> bool:
        try:
            return bool(is_valid(value))
        except Exception:
            return False  # undecided: jsonschema decides

    return accept
