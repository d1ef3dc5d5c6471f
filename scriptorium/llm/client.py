"""The ports through which the use case calls a model."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from scriptorium.llm.model import LLMRequest, LLMResponse

__all__ = ["AsyncClient", "Client"]


@runtime_checkable
class Client(Protocol):
    """Generates one response. Raises ``LLMGenerateError`` (with ``reason``) on failure."""

    def generate(self, request: LLMRequest) -> LLMResponse:
        """The model's response to ``request``."""
        ...


@runtime_checkable
class AsyncClient(Protocol):
    """The async twin of :class:`Client`."""

    async def agenerate(self, request: LLMRequest) -> LLMResponse:
        """The model's response to ``request``."""
        ...
