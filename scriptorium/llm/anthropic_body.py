"""Moved to :mod:`scriptorium.llm.anthropic.body`; kept as a re-export for one release."""

from scriptorium.llm.anthropic.api import COUNT_TOKENS_PATH, MESSAGES_PATH
from scriptorium.llm.anthropic.body import (
    MessagesBody,
    OutputBlocks,
    build_body,
    count_tokens_body,
    encode_body,
    message_params,
    output_blocks,
)

__all__ = [
    "COUNT_TOKENS_PATH",
    "MESSAGES_PATH",
    "MessagesBody",
    "OutputBlocks",
    "build_body",
    "count_tokens_body",
    "encode_body",
    "message_params",
    "output_blocks",
]
