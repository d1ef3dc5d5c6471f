"""Streaming for the Anthropic adapter: the request posted with ``"stream": true`` and read by
the shared loop of :mod:`scriptorium.llm.streaming`.

The body is the one :class:`~scriptorium.llm.anthropic.call.Call` sends for ``generate`` (built
once, media spliced in as it is sent), plus ``"stream": true``; the SDK sends it (auth, headers,
error statuses stay the SDK's) and hands back the HTTP response unread. What this module adds to
the shared loop is the Messages API's part: :class:`Fold` reads the events (``message_start``,
``content_block_*``, ``message_delta``; an ``error`` event is the server's failure, classified by
:func:`~scriptorium.llm.anthropic.sdk.classify`) into the text handed out and the Messages body a
non-streamed reply would have had, and ``message_stop`` is the terminator. That body is turned
into the :class:`LLMResponse` by the same code as a non-streamed reply, so usage, cost, finish
reason and metadata cannot differ. With the ``tool`` strategy the deltas are the tool input's JSON
as the model writes it (without the ``{"value": ...}`` wrapper a non-object schema travels in);
the output text is that input serialised as ``generate`` gives it. A thinking block's
``thinking_delta`` events are handed out as :class:`~scriptorium.llm.client.ReasoningChunk`
pieces; its ``signature_delta`` and a ``redacted_thinking`` block are folded into the body (where
they are counted, as in a plain reply), never handed out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.adapter import CallSource
from scriptorium.llm.anthropic.api import MESSAGES_PATH, PROVIDER
from scriptorium.llm.anthropic.call import USAGE_FIELDS, Call, Result, reply_info
from scriptorium.llm.anthropic.eventstream import EVENT_STREAM_TYPE, BedrockEvents
from scriptorium.llm.anthropic.platforms import BEDROCK, post, sending, stream_args
from scriptorium.llm.anthropic.sdk import aopen_messages_stream, open_messages_stream, sdk
from scriptorium.llm.client import ReasoningChunk
from scriptorium.llm.sdk_http import encode_body
from scriptorium.llm.streaming import (
    ErrorEvent,
    EventReader,
    event_json,
    sse_events,
)

__all__ = ["Fold", "Source", "Unwrap"]


# How a wrapped tool input begins: ``{"value":`` (a non-object root schema travels under "value").
_WRAPPER = re.compile(r'\s*\{\s*"value"\s*:\s*')
_WRAPPER_MAX = 64
_CLOSING = "} \t\r\n"
#: The stop reasons of an answer cut short by a limit (its tool input may be partial JSON).
_CUT_SHORT = ("max_tokens", "model_context_window_exceeded")


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


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class Fold:
    """Folds stream events into the Messages API body a non-streamed reply would have had;
    ``complete`` once ``message_stop`` was read."""

    __slots__ = (
        "blocks",
        "complete",
        "cut",
        "emitted",
        "ident",
        "model",
        "stop_reason",
        "tool",
        "unwrap",
        "usage",
    )

    def __init__(self, tool: str | None, wrapped: bool = False) -> None:
        self.tool = tool
        self.unwrap = Unwrap() if tool is not None and wrapped else None
        self.ident: str | None = None
        self.blocks: list[dict[str, Any]] = []
        self.model: str | None = None
        self.stop_reason: str | None = None
        self.usage: dict[str, Any] = {}
        self.complete = False
        #: The output text handed out so far (the tool input's JSON, as streamed).
        self.emitted: list[str] = []
        #: Whether the tool input was cut short (read as partial text, see :meth:`body`).
        self.cut = False

    def add(self, name: str | None, data: str) -> str | None:
        """Take one event (its name and data); the text it adds to the output, if any."""
        event = event_json(data)
        kind = event.get("type", name)
        if kind == "content_block_delta":
            return self._delta(_dict(event.get("delta")))
        if kind == "content_block_start":
            block = _dict(event.get("content_block"))
            kind = block.get("type")
            if kind == "tool_use":
                self.blocks.append({"type": "tool_use", "name": block.get("name"), "parts": []})
            elif kind == "text":
                self.blocks.append({"type": "text", "parts": [_text(block.get("text"))]})
            elif kind == "thinking":
                opening = block.get("thinking")
                parts = [opening] if isinstance(opening, str) and opening else []
                self.blocks.append({"type": "thinking", "parts": parts, "signature": ""})
                if parts:
                    return ReasoningChunk(parts[0])
            elif kind == "redacted_thinking":
                self.blocks.append({"type": kind, "parts": [], "data": block.get("data")})
            else:
                self.blocks.append({"type": kind, "parts": []})
        elif kind == "message_start":
            message = _dict(event.get("message"))
            self.ident = _str(message.get("id"))
            self.model = self.model or _str(message.get("model")) or None  # first non-empty
            self._usage(message.get("usage"))
        elif kind == "message_delta":
            self.stop_reason = _str(_dict(event.get("delta")).get("stop_reason"))
            self._usage(event.get("usage"))
        elif kind == "message_stop":
            self.complete = True
        elif kind == "error":
            raise ErrorEvent(_dict(event), "an error event in the stream")
        return None

    def _delta(self, delta: dict[str, Any]) -> str | None:
        block = self.blocks[-1] if self.blocks else None
        if block is None:
            return None
        kind = delta.get("type")
        if kind == "text_delta" and block["type"] == "text":
            text = _text(delta.get("text"))
            block["parts"].append(text)
            return text if self.tool is None else None
        if kind == "thinking_delta" and block["type"] == "thinking":
            thought = _text(delta.get("thinking"))
            block["parts"].append(thought)
            return ReasoningChunk(thought) if thought else None
        if kind == "signature_delta" and block["type"] == "thinking":
            block["signature"] += _text(delta.get("signature"))
            return None
        if kind == "input_json_delta" and block["type"] == "tool_use":
            partial = _text(delta.get("partial_json"))
            block["parts"].append(partial)
            if block.get("name") != self.tool:
                return None
            out = partial if self.unwrap is None else self.unwrap.feed(partial)
            self.emitted.append(out)
            return out
        return None

    def flush(self) -> str:
        """Text held back until the end (the rest of a wrapped tool input; as it came when the
        input was cut short, since no wrapper's closing brace was written)."""
        if self.unwrap is None:
            return ""
        return self._held() if self.cut else self.unwrap.flush()

    def _held(self) -> str:
        unwrap = self.unwrap
        return unwrap.held if unwrap is not None and unwrap.started else ""

    def _usage(self, usage: Any) -> None:
        for field in USAGE_FIELDS:
            value = _dict(usage).get(field)
            if type(value) is int and value >= 0:
                self.usage[field] = value
        # The thinking tokens among the output ones, and the cache writes split by TTL: the
        # same classes as in a non-streamed reply's usage.
        for field in ("output_tokens_details", "cache_creation"):
            details = _dict(usage).get(field)
            if isinstance(details, dict):
                self.usage[field] = details
        tier = _dict(usage).get("service_tier")
        if isinstance(tier, str):
            self.usage["service_tier"] = tier

    def body(self) -> dict[str, Any]:
        """The message these events spelled out."""
        content: list[dict[str, Any]] = []
        for block in self.blocks:
            text = "".join(block["parts"])
            if block["type"] == "text":
                content.append({"type": "text", "text": text})
            elif block["type"] == "thinking":
                content.append(
                    {"type": "thinking", "thinking": text, "signature": block["signature"]}
                )
            elif block["type"] == "redacted_thinking":
                content.append({"type": "redacted_thinking", "data": block["data"]})
            elif block["type"] == "tool_use":
                try:
                    value = json.loads(text) if text.strip() else {}
                except (ValueError, RecursionError) as err:
                    if self.stop_reason in _CUT_SHORT and block.get("name") == self.tool:
                        # Cut by the token limit: the answer is the text written so far (a
                        # ``length`` result, invalid), as the deltas gave it.
                        self.cut = True
                        partial = "".join(self.emitted) + self._held()
                        content.append(
                            {"type": "tool_use", "name": block["name"], "partial": partial}
                        )
                        continue
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


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _text(value: Any) -> str:
    """A text field of an event: a string, or a broken event."""
    if not isinstance(value, str):
        raise LLMGenerateError(
            "a stream event's text is not a string",
            reason="invalid_response",
            http_status=200,
            provider=PROVIDER,
        )
    return value


class Source(CallSource[Result]):
    """The Messages API's part of one streamed request (see
    :class:`~scriptorium.llm.streaming.StreamSource`)."""

    call: Call

    def _post(self, client: Any, body: dict[str, Any], timeout_s: float, stream_cls: Any) -> Any:
        module = sdk()
        return client.post(
            MESSAGES_PATH,
            content=encode_body({**body, "stream": True}),
            cast_to=module.types.Message,
            options={"timeout": timeout_s},
            stream=True,
            stream_cls=stream_cls[module.types.RawMessageStreamEvent],
        )

    def open(self, client: Any, timeout_s: float) -> Any:
        """Send the call's body with ``stream=True`` (media spliced in as it is sent, as for
        ``generate``); the HTTP response, unread (the SDK's typed stream is not read). On a
        cloud platform its SDK class routes the request (:mod:`.platforms`)."""
        call = self.call
        platform = call.platform
        if platform is not None:
            with sending(platform, call.wire, client, call.sent.body) as body:
                opened = post(
                    client,
                    MESSAGES_PATH,
                    {**body, "stream": True},
                    timeout_s,
                    **stream_args(sdk().Stream),
                )
            return opened.response
        with call.wire.sending(client, call.sent.body) as body:
            return open_messages_stream(
                client,
                body,
                timeout_s,
                lambda: self._post(client, body, timeout_s, sdk().Stream).response,
            )

    async def aopen(self, client: Any, timeout_s: float) -> Any:
        call = self.call
        platform = call.platform
        if platform is not None:
            with sending(platform, call.wire, client, call.sent.body) as body:
                opened = await post(
                    client,
                    MESSAGES_PATH,
                    {**body, "stream": True},
                    timeout_s,
                    **stream_args(sdk().AsyncStream),
                )
            return opened.response

        async def send() -> Any:
            return (await self._post(client, body, timeout_s, sdk().AsyncStream)).response

        with call.wire.sending(client, call.sent.body) as body:
            return await aopen_messages_stream(client, body, timeout_s, send)

    def fold(self) -> Fold:
        output = self.call.sent.output
        return Fold(None) if output is None else Fold(output.tool, output.wrapped)

    def events(self, headers: Mapping[str, str]) -> EventReader | None:
        """Server-sent events, or on Bedrock its binary event stream (each frame carrying one
        Messages API event: :mod:`.eventstream`)."""
        platform = self.call.platform
        if platform is not None and platform.name == BEDROCK:
            kind = str(headers.get("content-type", "")).lower()
            return BedrockEvents() if EVENT_STREAM_TYPE in kind else None
        return sse_events(headers)

    def folded(self, fold: Fold, headers: Mapping[str, str]) -> Result:
        return fold.body(), reply_info(headers)

    def read_body(self, content: bytes, headers: Mapping[str, str]) -> Result:
        return self.call.read(content), reply_info(headers)
