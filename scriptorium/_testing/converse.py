"""Bedrock's Converse API as ``FakeBedrockServer`` speaks it: a Messages API answer (what the
shared Anthropic scripting builds) turned into the Converse shape, plain and streamed.

Plain: ``{"output": {"message": {"role", "content"}}, "stopReason", "usage", "metrics"}`` with
``text``, ``toolUse`` and ``reasoningContent`` blocks. Streamed: the AWS event stream of
``messageStart``, ``contentBlockStart`` (a tool's), ``contentBlockDelta`` (``text``,
``toolUse.input``, ``reasoningContent.text``), ``contentBlockStop``, ``messageStop`` and
``metadata`` events, each an ``event`` message whose ``:event-type`` header names it and whose
payload is the event's JSON; an error event becomes an ``exception`` message. Written from
Bedrock's documentation of the API, apart from the adapter's reader.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scriptorium._testing.eventstream import encode_message, exception_message

__all__ = ["STOP_REASONS", "converse_body", "converse_events", "event_message"]

#: A Messages API ``stop_reason`` -> Converse's ``stopReason``.
STOP_REASONS: Mapping[str, str] = {
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "tool_use": "tool_use",
    "refusal": "content_filtered",
}
_STREAM_EXCEPTIONS = {
    "rate_limit_error": "throttlingException",
    "overloaded_error": "serviceUnavailableException",
    "api_error": "internalServerException",
    "timeout_error": "modelTimeoutException",
    "invalid_request_error": "validationException",
}


def _usage(usage: Mapping[str, Any]) -> dict[str, int]:
    found = {
        "inputTokens": int(usage.get("input_tokens", 0) or 0),
        "outputTokens": int(usage.get("output_tokens", 0) or 0),
    }
    if usage.get("cache_read_input_tokens"):
        found["cacheReadInputTokens"] = int(usage["cache_read_input_tokens"])
    if usage.get("cache_creation_input_tokens"):
        found["cacheWriteInputTokens"] = int(usage["cache_creation_input_tokens"])
    found["totalTokens"] = sum(found.values())
    return found


def _block(block: Mapping[str, Any]) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "text":
        return {"text": block.get("text", "")}
    if kind == "tool_use":
        return {
            "toolUse": {
                "toolUseId": block.get("id", "tooluse_fake"),
                "name": block.get("name", "output"),
                "input": block.get("input"),
            }
        }
    if kind == "thinking":
        return {
            "reasoningContent": {
                "reasoningText": {"text": block.get("thinking", ""), "signature": "sig"}
            }
        }
    if kind == "redacted_thinking":
        return {"reasoningContent": {"redactedContent": "ZW5jcnlwdGVk"}}
    return None


def converse_body(message: Mapping[str, Any]) -> dict[str, Any]:
    """A Messages API message as Converse's answer."""
    blocks = [b for b in (_block(c) for c in message.get("content", [])) if b is not None]
    stop = message.get("stop_reason")
    return {
        "output": {"message": {"role": "assistant", "content": blocks}},
        "stopReason": STOP_REASONS.get(str(stop), str(stop)) if stop else "end_turn",
        "usage": _usage(message.get("usage") or {}),
        "metrics": {"latencyMs": 1},
    }


def event_message(name: str, payload: Mapping[str, Any]) -> bytes:
    """One Converse stream event as an AWS event stream message."""
    headers = {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, json.dumps(payload, separators=(",", ":")).encode("utf-8"))


class ConverseEvents:
    """Turns the Messages API stream events of one answer into Converse stream messages, keeping
    what Converse reports once at the end (the usage)."""

    def __init__(self) -> None:
        self.usage: dict[str, Any] = {}

    def convert(self, event: Mapping[str, Any]) -> bytes:
        """The Converse messages of one Messages API stream event (maybe none)."""
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self.usage.update(message.get("usage") or {})
            return event_message("messageStart", {"role": "assistant"})
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") != "tool_use":
                return b""
            start = {"toolUse": {"toolUseId": block.get("id", "t"), "name": block.get("name")}}
            return event_message(
                "contentBlockStart", {"start": start, "contentBlockIndex": event.get("index", 0)}
            )
        if kind == "content_block_delta":
            delta = event.get("delta") or {}
            converse = _delta(delta)
            if converse is None:
                return b""
            return event_message(
                "contentBlockDelta", {"delta": converse, "contentBlockIndex": event.get("index", 0)}
            )
        if kind == "content_block_stop":
            return event_message("contentBlockStop", {"contentBlockIndex": event.get("index", 0)})
        if kind == "message_delta":
            self.usage.update(event.get("usage") or {})
            stop = (event.get("delta") or {}).get("stop_reason")
            reason = STOP_REASONS.get(str(stop), str(stop)) if stop else "end_turn"
            return event_message("messageStop", {"stopReason": reason})
        if kind == "message_stop":
            return event_message(
                "metadata", {"usage": _usage(self.usage), "metrics": {"latencyMs": 1}}
            )
        if kind == "error":
            error = event.get("error") or {}
            name = _STREAM_EXCEPTIONS.get(str(error.get("type")), "modelStreamErrorException")
            return exception_message(name, str(error.get("message", "")))
        return b""


def _delta(delta: Mapping[str, Any]) -> dict[str, Any] | None:
    kind = delta.get("type")
    if kind == "text_delta":
        return {"text": delta.get("text", "")}
    if kind == "input_json_delta":
        return {"toolUse": {"input": delta.get("partial_json", "")}}
    if kind == "thinking_delta":
        return {"reasoningContent": {"text": delta.get("thinking", "")}}
    return None


def converse_events() -> ConverseEvents:
    """A fresh converter for one streamed answer."""
    return ConverseEvents()
