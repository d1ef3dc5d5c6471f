"""Moved to :mod:`scriptorium.llm.openai.schema`; kept as a re-export for one release."""

from scriptorium.llm.openai.schema import STRICT_KEYWORDS, strict_schema

__all__ = ["STRICT_KEYWORDS", "strict_schema"]
