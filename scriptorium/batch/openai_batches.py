"""Moved to :mod:`scriptorium.llm.openai.batches`; kept as a re-export for one release."""

from scriptorium.llm.openai.api import PROVIDER
from scriptorium.llm.openai.batches import ENDPOINT, TAG_KEY, OpenAIBatches

__all__ = ["ENDPOINT", "PROVIDER", "TAG_KEY", "OpenAIBatches"]
