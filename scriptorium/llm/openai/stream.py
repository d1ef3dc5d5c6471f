"""Streaming for the ``openai`` adapter: Chat Completions with ``stream=True`` and
``stream_options.include_usage``, behind the same retry loop.

One attempt is "send, and read chunks until the first text": a 429, a 5xx, a reset or an error
chunk before any text goes through the ordinary retry rules. From the first text on nothing is
retried; a failure is an ``LLMGenerateError`` carrying ``partial_text``.

The chunks are folded back into the ``chat.completion`` body a non-streamed request would have
returned, and that body goes through :func:`~scriptorium.llm.openai.call.parse_completion`, so text,
finish reason, usage and metadata are read by one piece of code for both paths. The deltas are
the message content (the tool call's arguments with the ``tool`` strategy; a refusal's text when
the model refuses).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from scriptorium.llm._clients import ClientCache
from scriptorium.llm.adapter import broken_stream
from scriptorium.llm.model import LLMRequest
from scriptorium.llm.openai.api import PROVIDER
from scriptorium.llm.openai.call import Call
from scriptorium.llm.openai.sdk import classify
from scriptorium.llm.retry.loop import acall_with_retry, call_with_retry
from scriptorium.llm.retry.policy import RetryHooks
from scriptorium.llm.streaming import StreamItem, aread_to_first, arest, read_to_first, rest

__all__ = ["Fold", "astream", "stream"]


class Fold:
    """Folds streamed chunks into the ``chat.completion`` body they add up to."""

    __slots__ = ("args", "content", "finish", "ident", "model", "name", "refusal", "usage")

    def __init__(self) -> None:
        self.content: list[str] = []
        self.refusal: list[str] = []
        self.args: list[str] = []
        self.name: str | None = None
        self.finish: str | None = None
        self.usage: Any = None
        self.model: str | None = None
        self.ident: str | None = None

    def add(self, chunk: Any) -> str | None:
        """Take one chunk; the text it adds to the output, if any."""
        if self.model is None:
            self.model = getattr(chunk, "model", None)
            self.ident = getattr(chunk, "id", None)
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage.model_dump() if hasattr(usage, "model_dump") else usage
        choices = getattr(chunk, "choices", None)
        if not choices:
            return None
        choice = choices[0]
        if choice.finish_reason is not None:
            self.finish = choice.finish_reason
        delta = choice.delta
        if delta is None:
            return None
        piece: str | None = None
        if delta.content:
            self.content.append(delta.content)
            piece = delta.content
        refusal = getattr(delta, "refusal", None)
        if refusal:
            self.refusal.append(refusal)
            piece = refusal
        calls = getattr(delta, "tool_calls", None)
        if calls:
            function = calls[0].function
            if function is not None:
                if function.name:
                    self.name = function.name
                if function.arguments:
                    self.args.append(function.arguments)
                    piece = function.arguments
        return piece

    def body(self) -> bytes:
        """The completion these chunks spelled out, as the bytes of a non-streamed 200."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self.content) if self.content else None,
            "refusal": "".join(self.refusal) if self.refusal else None,
        }
        if self.args or self.name:
            function = {"name": self.name or "", "arguments": "".join(self.args)}
            message["tool_calls"] = [{"id": "call", "type": "function", "function": function}]
        body: dict[str, Any] = {
            "id": self.ident,
            "object": "chat.completion",
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish}],
        }
        if self.usage is not None:
            body["usage"] = self.usage
        return json.dumps(body).encode("utf-8")


class _Raw:
    """Stands for the raw HTTP response :meth:`Call.read` takes: the folded body and the headers."""

    __slots__ = ("content", "headers")

    def __init__(self, content: bytes, headers: Any) -> None:
        self.content = content
        self.headers = headers


def _streaming(call: Call) -> dict[str, Any]:
    """The call's parameters asking for a stream that ends with a usage chunk."""
    return {**call.params, "stream": True, "stream_options": {"include_usage": True}}


def stream(clients: ClientCache, hooks: RetryHooks, request: LLMRequest) -> Iterator[StreamItem]:
    """The response to ``request`` as it is written: text chunks, then the ``LLMResponse``
    (SDK clients from ``clients``, retries driven by ``hooks``)."""
    call = Call(request)
    params = _streaming(call)
    client = clients.sync(call.base_url, call.key)
    started = time.perf_counter()

    def attempt(timeout_s: float) -> tuple[Any, Iterator[Any], Fold, str | None]:
        with call.wire.sending(client, params) as sent:
            chunks = client.chat.completions.create(**sent, timeout=timeout_s)
        fold = Fold()
        iterator, first = read_to_first(chunks, fold)
        return chunks, iterator, fold, first

    (chunks, iterator, fold, first), attempts, _ = call_with_retry(
        attempt, classify, **call.retry_args(hooks)
    )

    def broken(err: Exception, partial: str) -> Exception:
        return broken_stream(
            err,
            partial,
            provider=PROVIDER,
            model=call.model,
            key=call.key,
            attempts=attempts,
            classify=classify,
        )

    try:
        yield from rest(iterator, fold, first, broken)
    finally:
        chunks.close()
    parsed = call.read(_Raw(fold.body(), chunks.response.headers))
    yield call.response(parsed, attempts, time.perf_counter() - started)


async def astream(
    clients: ClientCache, hooks: RetryHooks, request: LLMRequest
) -> AsyncIterator[StreamItem]:
    """The async twin of :func:`stream`."""
    call = Call(request)
    params = _streaming(call)
    client = await clients.async_(call.base_url, call.key)
    started = time.perf_counter()

    async def attempt(timeout_s: float) -> tuple[Any, AsyncIterator[Any], Fold, str | None]:
        with call.wire.sending(client, params) as sent:
            chunks = await client.chat.completions.create(**sent, timeout=timeout_s)
        fold = Fold()
        iterator, first = await aread_to_first(chunks, fold)
        return chunks, iterator, fold, first

    (chunks, iterator, fold, first), attempts, _ = await acall_with_retry(
        attempt, classify, **call.retry_args(hooks)
    )

    def broken(err: Exception, partial: str) -> Exception:
        return broken_stream(
            err,
            partial,
            provider=PROVIDER,
            model=call.model,
            key=call.key,
            attempts=attempts,
            classify=classify,
        )

    try:
        async for piece in arest(iterator, fold, first, broken):
            yield piece
    finally:
        await chunks.close()
    parsed = call.read(_Raw(fold.body(), chunks.response.headers))
    yield call.response(parsed, attempts, time.perf_counter() - started)
