"""Moved to :mod:`scriptorium.llm.anthropic.stream`; kept for one release with the old calling
form (``stream(client, request)``), which now streams through the client itself."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from scriptorium.llm.anthropic.client import AnthropicClient
from scriptorium.llm.anthropic.sdk import classify
from scriptorium.llm.client import StreamItem
from scriptorium.llm.model import Failure, LLMRequest
from scriptorium.llm.retry.http import as_failure

__all__ = ["astream", "err_failure", "stream"]


def err_failure(err: BaseException) -> Failure:
    """The classification of a failure while reading a stream (ours pass through as they are)."""
    return as_failure(err, classify)


def stream(owner: AnthropicClient, request: LLMRequest) -> Iterator[StreamItem]:
    """``owner.stream(request)``."""
    return owner.stream(request)


def astream(owner: AnthropicClient, request: LLMRequest) -> AsyncIterator[StreamItem]:
    """``owner.astream(request)``."""
    return owner.astream(request)
