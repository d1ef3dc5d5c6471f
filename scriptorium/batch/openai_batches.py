"""Moved to :mod:`scriptorium.llm.openai.batches`; kept as a re-export for one release."""

from scriptorium.llm.openai.batches import TAG_KEY, OpenAIBatches

__all__ = ["TAG_KEY", "OpenAIBatches"]
