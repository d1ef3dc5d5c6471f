"""What every provider's ``prompt`` strategy shares: the instructions appended to the system
text when the schema travels as words rather than as an API feature (the output is still
validated locally against the full schema)."""

from __future__ import annotations

import json

from scriptorium.llm.model import StructuredOutput

__all__ = ["prompt_instructions"]


def prompt_instructions(spec: StructuredOutput) -> str:
    """The text the ``prompt`` strategy appends to the system text: valid JSON only, and for a
    ``json_schema`` output the schema itself."""
    if spec.format == "json" or not isinstance(spec.schema_, dict):
        return "Respond with a single valid JSON value only: no prose, no code fences."
    schema = json.dumps(spec.schema_, ensure_ascii=False, sort_keys=True)
    return (
        "Respond with a single JSON value only (no prose, no code fences) that is valid against "
        f"this JSON Schema:\n{schema}"
    )
