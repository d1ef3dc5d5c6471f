"""Moved to :mod:`scriptorium.llm.openai.stream`; kept for one release with the old calling form
(``stream(client, request)``), which now streams through the client itself."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from scriptorium.llm.client import StreamItem
from scriptorium.llm.model import LLMRequest
from scriptorium.llm.openai.client import OpenAIClient

__all__ = ["astream", "stream"]


def stream(owner: OpenAIClient, request: LLMRequest) -> Iterator[StreamItem]:
    """``owner.stream(request)``."""
    return owner.stream(request)


def astream(owner: OpenAIClient, request: LLMRequest) -> AsyncIterator[StreamItem]:
    """``owner.astream(request)``."""
    return owner.astream(request)
