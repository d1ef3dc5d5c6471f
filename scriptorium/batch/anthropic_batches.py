"""Moved to :mod:`scriptorium.llm.anthropic.batches`; kept as a re-export for one release."""

from scriptorium.llm.anthropic.batches import AnthropicBatches, message_params

__all__ = ["AnthropicBatches", "message_params"]
