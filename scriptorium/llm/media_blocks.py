"""Moved: each provider's content blocks are in its package's ``body`` module
(:mod:`scriptorium.llm.anthropic.body`, :mod:`scriptorium.llm.openai.body`), the provider-free
base64 pieces in :mod:`scriptorium.llm.media.wire`; kept as a re-export for one release."""

from scriptorium.llm.anthropic.body import anthropic_content, anthropic_messages
from scriptorium.llm.media.wire import Encoder, b64_text
from scriptorium.llm.openai.body import openai_content, openai_messages

__all__ = [
    "Encoder",
    "anthropic_content",
    "anthropic_messages",
    "b64_text",
    "openai_content",
    "openai_messages",
]
