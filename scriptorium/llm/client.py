"""The ports through which the use case calls a model: generation (sync and async) and the small
optional capabilities an adapter may add (streaming, token counting, verifying a profile).

Code that uses a capability asks :func:`supports` (an ``isinstance`` check against the
capability's Protocol, remembered per class because a runtime-checkable ``isinstance`` is slow on
a hot path) instead of probing for attributes with ``getattr``.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Protocol, TypeAlias, cast, runtime_checkable

from scriptorium.llm.model import LLMRequest, LLMResponse, Target, Uncounted

if TYPE_CHECKING:
    from pydantic import SecretStr

__all__ = [
    "AsyncClient",
    "AsyncStreamingClient",
    "Client",
    "ReasoningChunk",
    "StreamItem",
    "StreamingClient",
    "TokenCounter",
    "Verifier",
    "agenerate_with",
    "supports",
]


class ReasoningChunk(str):
    """A piece of the model's reasoning in a client's stream, as it arrives (before the text it
    leads to). A ``str``, so a stream stays ``str`` items then the response; a reader tells the
    two apart with ``isinstance(item, ReasoningChunk)``. Reasoning chunks never add up to the
    response's ``text`` (they add up to its ``reasoning``)."""

    __slots__ = ()


#: What a client's stream yields: text chunks as they arrive (any of them a
#: :class:`ReasoningChunk`), then the complete response.
StreamItem: TypeAlias = "str | LLMResponse"


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


@runtime_checkable
class StreamingClient(Protocol):
    """A client that can stream: text chunks as they arrive (reasoning ones as
    :class:`ReasoningChunk`), then the complete response."""

    def stream(self, request: LLMRequest) -> Iterator[StreamItem]:
        """The response to ``request``, as it is written."""
        ...


@runtime_checkable
class AsyncStreamingClient(Protocol):
    """The async twin of :class:`StreamingClient`."""

    def astream(self, request: LLMRequest) -> AsyncIterator[StreamItem]:
        """The response to ``request``, as it is written."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """A client that can count a request's input tokens with the provider (``prepare
    --count-tokens``); None when it cannot for this request, or :class:`Uncounted` saying why
    its endpoint could not."""

    def count_tokens(self, request: LLMRequest) -> int | Uncounted | None:
        """The input tokens ``request`` would send."""
        ...


@runtime_checkable
class Verifier(Protocol):
    """A client that can prove a profile's key, endpoint and model with a minimal real request
    (``scriptorium verify``)."""

    def verify(self, target: Target, api_key: SecretStr | str | None) -> LLMResponse:
        """The answer to the smallest request that proves ``target`` works with ``api_key``."""
        ...


_known: dict[tuple[type, type], bool] = {}
_known_lock = threading.Lock()


def supports(client: object, capability: type) -> bool:
    """Whether ``client`` has ``capability`` (one of the Protocols above), decided once per class
    of client."""
    key = (type(client), capability)
    answer = _known.get(key)
    if answer is None:
        answer = isinstance(client, capability)
        with _known_lock:
            if len(_known) > 1024:
                _known.clear()
            _known[key] = answer
    return answer


async def agenerate_with(client: object, request: LLMRequest) -> LLMResponse:
    """``client``'s response to ``request`` for an async caller: its ``agenerate`` when it has
    one, else its ``generate`` in a worker thread (the event loop never waits on a sync client).
    The one rule for every async path that holds a client of either kind."""
    if supports(client, AsyncClient):
        return await cast("AsyncClient", client).agenerate(request)
    import asyncio  # not at module level: slow to import for sync use, loaded by now

    return await asyncio.to_thread(cast("Client", client).generate, request)
