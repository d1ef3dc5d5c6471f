"""Moved to :mod:`scriptorium.llm.anthropic.batches`; kept as a re-export for one release."""

from scriptorium.llm.anthropic.api import PROVIDER
from scriptorium.llm.anthropic.batches import AnthropicBatches, message_params

__all__ = ["PROVIDER", "AnthropicBatches", "message_params"]
