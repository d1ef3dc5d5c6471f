"""The shortest prompt prefix each model will cache, in tokens (Anthropic's published minimums).

A cache breakpoint before fewer tokens than this is accepted by the API and silently caches
nothing; ``scriptorium check`` warns about it using this table.
"""

from __future__ import annotations

import re

__all__ = ["CACHE_MINIMUMS_DATE", "minimum_cacheable_tokens"]

CACHE_MINIMUMS_DATE = "2026-11"

# Most specific first: the first pattern that matches the model name wins.
_MINIMUMS: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"^claude-opus-4-([5-9]|\d\d)"), 4096),
    (re.compile(r"^claude-haiku-4-5"), 4096),
    (re.compile(r"^claude-(3-5-haiku|3-haiku|haiku-3)"), 2048),
    (re.compile(r"^claude-(opus|sonnet)-4"), 1024),
    (re.compile(r"^claude-3-7-sonnet"), 1024),
    (re.compile(r"^claude-"), 1024),
)


def minimum_cacheable_tokens(model: str) -> int | None:
    """The minimum cacheable prefix of ``model`` in tokens; None for models outside the table
    (OpenAI caches prompts of 1024 tokens and more by itself, with nothing to ask)."""
    name = model.strip().lower()
    for pattern, tokens in _MINIMUMS:
        if pattern.match(name):
            return tokens
    return None
