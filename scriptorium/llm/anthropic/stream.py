"""Streaming for the Anthropic adapter: the SDK's low-level ``post`` with ``stream=True``, behind
the same retry loop.

The body is the one :class:`~scriptorium.llm.anthropic.call.Call` sends for ``generate`` (built
once, media spliced in as it is sent), plus ``"stream": true``; the SDK parses the server-sent
events into its typed stream events. One attempt is "send, and read events until the first text": whatever fails up to
there (a 529, a reset, an ``error`` event before any text) goes through the ordinary retry rules.
From the first text on, nothing is retried (the consumer has already seen text): a failure is an
``LLMGenerateError`` carrying ``partial_text``.

The events are folded into a Messages API body, and that body is turned into the
:class:`LLMResponse` by the same code as a non-streamed reply, so usage, cost, finish reason and
metadata cannot differ. With the ``tool`` strategy the deltas are the tool input's JSON as the
model writes it (without the ``{"value": ...}`` wrapper a non-object schema travels in); the output
text is that input serialised as ``generate`` gives it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from scriptorium.errors import LLMGenerateError
from scriptorium.llm._clients import ClientCache
from scriptorium.llm.adapter import broken_stream
from scriptorium.llm.anthropic.api import MESSAGES_PATH, PROVIDER
from scriptorium.llm.anthropic.call import USAGE_FIELDS, Call, reply_info
from scriptorium.llm.anthropic.sdk import classify, sdk
from scriptorium.llm.model import LLMRequest
from scriptorium.llm.retry.loop import acall_with_retry, call_with_retry
from scriptorium.llm.retry.policy import RetryHooks
from scriptorium.llm.sdk_http import encode_body
from scriptorium.llm.streaming import StreamItem, aread_to_first, arest, read_to_first, rest

__all__ = ["Fold", "Unwrap", "astream", "stream"]


# How a wrapped tool input begins: ``{"value":`` (a non-object root schema travels under "value").
_WRAPPER = re.compile(r'\s*\{\s*"value"\s*:\s*')
_WRAPPER_MAX = 64
_CLOSING = "} \t\r\n"


class Unwrap:
    """The JSON of a wrapped tool input without its ``{"value": ...}`` wrapper, as it streams:
    the opening is held until it is recognised, and a trailing run of ``}`` and whitespace until
    more text shows it is not the end (the last ``}`` of the whole input is the wrapper's)."""

    __slots__ = ("head", "held", "started")

    def __init__(self) -> None:
        self.head: str | None = ""
        self.held = ""
        self.started = False

    def feed(self, piece: str) -> str:
        if not self.started:
            assert self.head is not None
            self.head += piece
            match = _WRAPPER.match(self.head)
            if match is None or match.end() == len(self.head):
                if match is not None or len(self.head) < _WRAPPER_MAX:
                    return ""  # not recognised yet, or recognised and the value not begun
                piece, self.head = self.head, None  # not a wrapper after all: pass it through
                self.started = True
                return piece
            self.started = True
            piece = self.head[match.end() :]
        if self.head is None:
            return piece
        text = self.held + piece
        kept = text.rstrip(_CLOSING)
        self.held = text[len(kept) :]
        return kept

    def flush(self) -> str:
        """What is left once the input is complete, the wrapper's closing brace dropped."""
        if not self.started:
            return self.head or ""
        held = self.held
        cut = held.rfind("}")
        self.held = ""
        return held if self.head is None or cut < 0 else held[:cut] + held[cut + 1 :]


class Fold:
    """Folds stream events into the Messages API body a non-streamed reply would have had."""

    __slots__ = ("blocks", "ident", "model", "stop_reason", "tool", "unwrap", "usage")

    def __init__(self, tool: str | None, wrapped: bool = False) -> None:
        self.tool = tool
        self.unwrap = Unwrap() if tool is not None and wrapped else None
        self.ident: str | None = None
        self.blocks: list[dict[str, Any]] = []
        self.model: str | None = None
        self.stop_reason: str | None = None
        self.usage: dict[str, Any] = {}

    def add(self, event: Any) -> str | None:
        """Take one event; the text it adds to the output, if any."""
        kind = getattr(event, "type", None)
        if kind == "content_block_delta":
            delta = event.delta
            block = self.blocks[-1] if self.blocks else None
            if delta.type == "text_delta" and block is not None and block["type"] == "text":
                block["parts"].append(delta.text)
                return delta.text if self.tool is None else None
            if (
                delta.type == "input_json_delta"
                and block is not None
                and block["type"] == "tool_use"
            ):
                block["parts"].append(delta.partial_json)
                if block.get("name") != self.tool:
                    return None
                if self.unwrap is not None:
                    return self.unwrap.feed(delta.partial_json)
                return str(delta.partial_json)
            return None
        if kind == "content_block_start":
            block = event.content_block
            if block.type == "tool_use":
                self.blocks.append({"type": "tool_use", "name": block.name, "parts": []})
            elif block.type == "text":
                self.blocks.append({"type": "text", "parts": [block.text or ""]})
            else:
                self.blocks.append({"type": block.type, "parts": []})
        elif kind == "message_start":
            message = event.message
            self.ident = message.id
            self.model = message.model
            self._usage(message.usage)
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason
            self._usage(event.usage)
        return None

    def flush(self) -> str:
        """Text held back until the end (the rest of a wrapped tool input)."""
        return "" if self.unwrap is None else self.unwrap.flush()

    def _usage(self, usage: Any) -> None:
        if usage is None:
            return
        for field in USAGE_FIELDS:
            value = getattr(usage, field, None)
            if isinstance(value, int) and value >= 0:
                self.usage[field] = value

    def body(self) -> dict[str, Any]:
        """The message these events spelled out."""
        content: list[dict[str, Any]] = []
        for block in self.blocks:
            text = "".join(block["parts"])
            if block["type"] == "text":
                content.append({"type": "text", "text": text})
            elif block["type"] == "tool_use":
                try:
                    value = json.loads(text) if text.strip() else {}
                except ValueError as err:
                    raise LLMGenerateError(
                        "the streamed tool input is not JSON",
                        reason="invalid_response",
                        http_status=200,
                        provider=PROVIDER,
                    ) from err
                content.append({"type": "tool_use", "name": block["name"], "input": value})
        return {
            "id": self.ident,
            "content": content,
            "stop_reason": self.stop_reason,
            "usage": self.usage or None,
            "model": self.model,
        }


def _open(client: Any, call: Call, timeout_s: float) -> Any:
    """Send the call's body with ``stream=True`` (media spliced in as it is sent, as for
    ``generate``); the SDK's ``Stream`` of typed events."""
    module = sdk()
    with call.wire.sending(client, call.sent.body) as body:
        return client.post(
            MESSAGES_PATH,
            content=encode_body({**body, "stream": True}),
            cast_to=module.types.Message,
            options={"timeout": timeout_s},
            stream=True,
            stream_cls=module.Stream[module.types.RawMessageStreamEvent],
        )


async def _aopen(client: Any, call: Call, timeout_s: float) -> Any:
    """The async twin of :func:`_open`."""
    module = sdk()
    with call.wire.sending(client, call.sent.body) as body:
        return await client.post(
            MESSAGES_PATH,
            content=encode_body({**body, "stream": True}),
            cast_to=module.types.Message,
            options={"timeout": timeout_s},
            stream=True,
            stream_cls=module.AsyncStream[module.types.RawMessageStreamEvent],
        )


def _fold(call: Call) -> Fold:
    output = call.sent.output
    if output is None:
        return Fold(None)
    return Fold(output.tool, output.wrapped)


def stream(clients: ClientCache, hooks: RetryHooks, request: LLMRequest) -> Iterator[StreamItem]:
    """The response to ``request`` as it is written: text chunks, then the ``LLMResponse``
    (SDK clients from ``clients``, retries driven by ``hooks``)."""
    call = Call(request)
    client = clients.sync(call.base_url, call.key)
    started = time.perf_counter()

    def attempt(timeout_s: float) -> tuple[Any, Iterator[Any], Fold, str | None]:
        events = _open(client, call, timeout_s)
        fold = _fold(call)
        iterator, first = read_to_first(events, fold)
        return events, iterator, fold, first

    (events, iterator, fold, first), attempts, _ = call_with_retry(
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
        tail = fold.flush()
        if tail:
            yield tail
    finally:
        events.close()
    reply = reply_info(events.response.headers)
    yield call.response((fold.body(), reply), attempts, time.perf_counter() - started)


async def astream(
    clients: ClientCache, hooks: RetryHooks, request: LLMRequest
) -> AsyncIterator[StreamItem]:
    """The async twin of :func:`stream`."""
    call = Call(request)
    client = await clients.async_(call.base_url, call.key)
    started = time.perf_counter()

    async def attempt(timeout_s: float) -> tuple[Any, AsyncIterator[Any], Fold, str | None]:
        events = await _aopen(client, call, timeout_s)
        fold = _fold(call)
        iterator, first = await aread_to_first(events, fold)
        return events, iterator, fold, first

    (events, iterator, fold, first), attempts, _ = await acall_with_retry(
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
        tail = fold.flush()
        if tail:
            yield tail
    finally:
        await events.close()
    reply = reply_info(events.response.headers)
    yield call.response((fold.body(), reply), attempts, time.perf_counter() - started)
