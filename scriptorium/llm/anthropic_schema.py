"""Moved to :mod:`scriptorium.llm.anthropic.schema`; kept as a re-export for one release."""

from scriptorium.llm.anthropic.schema import (
    Strategy,
    choose_strategy,
    prompt_instructions,
    reduce_schema,
    reduce_schema_cached,
    supports_native,
    tool_name,
)

__all__ = [
    "Strategy",
    "choose_strategy",
    "prompt_instructions",
    "reduce_schema",
    "reduce_schema_cached",
    "supports_native",
    "tool_name",
]
