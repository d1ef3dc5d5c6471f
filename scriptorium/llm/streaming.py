"""Streaming at the LLM boundary: the optional ``stream`` / ``astream`` methods of a client.

A streaming client yields the text as it arrives (``str`` chunks) and then, as its last item, the
complete :class:`LLMResponse` (whose ``text`` is what the chunks add up to; usage, finish reason,
attempts and metadata exactly as ``generate`` would report them). A client that ends without a
response is taken at its word: the response is the chunks joined.

Retries belong to the client and happen only before its first chunk; once text has been handed
out a failure is final (``LLMGenerateError``; the run's driver fills in ``partial_text``).

:func:`stream_of` and :func:`astream_of` stream any client: one with ``stream``/``astream`` streams
for real, one with only ``generate``/``agenerate`` is streamed as one chunk.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Protocol

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.client import (
    AsyncClient,
    AsyncStreamingClient,
    Client,
    StreamingClient,
    StreamItem,
    supports,
)
from scriptorium.llm.model import LLMRequest, LLMResponse

__all__ = [
    "AsyncStreamingClient",
    "StreamItem",
    "StreamingClient",
    "aread_to_first",
    "arest",
    "astream_of",
    "chunked",
    "read_to_first",
    "rest",
    "stream_of",
]


def chunked(text: str, pieces: int = 4) -> list[str]:
    """``text`` cut into about ``pieces`` non-empty chunks (fewer for short texts), in order.

    Fakes and recordings stream with it, so code under test sees text arrive in several parts.
    """
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def stream_of(client: Any, request: LLMRequest) -> Iterator[StreamItem]:
    """``client``'s stream for ``request``: its own ``stream`` when it has one, else its
    ``generate`` answer as one chunk."""
    if supports(client, StreamingClient):
        return iter(client.stream(request))
    if not supports(client, Client):
        raise LLMGenerateError("the client has no generate() or stream()", reason="config")
    return _one_chunk(client, request)


def _one_chunk(client: Client, request: LLMRequest) -> Iterator[StreamItem]:
    response = client.generate(request)
    if isinstance(response, LLMResponse) and response.text:
        yield response.text
    yield response


def astream_of(client: Any, request: LLMRequest) -> AsyncIterator[StreamItem]:
    """The async twin of :func:`stream_of`: ``astream``, else ``agenerate`` as one chunk, else
    ``generate`` in a worker thread as one chunk."""
    if supports(client, AsyncStreamingClient):
        return aiter(client.astream(request))
    return _aone_chunk(client, request)


async def _aone_chunk(client: Any, request: LLMRequest) -> AsyncIterator[StreamItem]:
    if supports(client, AsyncClient):
        response = await client.agenerate(request)
    else:
        if not supports(client, Client):
            raise LLMGenerateError("the client has no generate() or astream()", reason="config")
        response = await asyncio.to_thread(client.generate, request)
    if isinstance(response, LLMResponse) and response.text:
        yield response.text
    yield response


# --- the reading loop both SDK adapters share ---------------------------------------------------


class Fold(Protocol):
    """Turns a provider's stream events into text pieces (None: the event carries no text)."""

    def add(self, event: Any) -> str | None: ...


Broken = Callable[[Exception, str], Exception]


def read_to_first(events: Any, fold: Fold) -> tuple[Iterator[Any], str | None]:
    """Read ``events`` (an SDK stream) until ``fold`` gives its first text, inside one retried
    attempt; the stream is closed when anything fails. None: it ended without text."""
    try:
        iterator = iter(events)
        for event in iterator:
            piece = fold.add(event)
            if piece:
                return iterator, piece
        return iterator, None
    except BaseException:
        events.close()
        raise


async def aread_to_first(events: Any, fold: Fold) -> tuple[AsyncIterator[Any], str | None]:
    """The async twin of :func:`read_to_first`."""
    try:
        iterator = aiter(events)
        async for event in iterator:
            piece = fold.add(event)
            if piece:
                return iterator, piece
        return iterator, None
    except BaseException:
        await events.close()
        raise


def rest(iterator: Iterator[Any], fold: Fold, first: str | None, broken: Broken) -> Iterator[str]:
    """``first`` and the text after it. A failure once text was handed out is not retried: it
    becomes ``broken(err, text so far)``."""
    if first is None:
        return
    sent = [first]
    yield first
    try:
        for event in iterator:
            piece = fold.add(event)
            if piece:
                sent.append(piece)
                yield piece
    except Exception as err:
        raise broken(err, "".join(sent)) from err


async def arest(
    iterator: AsyncIterator[Any], fold: Fold, first: str | None, broken: Broken
) -> AsyncIterator[str]:
    """The async twin of :func:`rest`."""
    if first is None:
        return
    sent = [first]
    yield first
    try:
        async for event in iterator:
            piece = fold.add(event)
            if piece:
                sent.append(piece)
                yield piece
    except Exception as err:
        raise broken(err, "".join(sent)) from err
