"""Streaming on the Responses API (``stream: true``), read by the shared loop of
:mod:`scriptorium.llm.streaming`.

The deltas handed out are ``response.output_text.delta`` (the answer), ``response.refusal.delta``
(a refusal's text), ``response.function_call_arguments.delta`` (the ``tool`` strategy's output)
and ``response.reasoning_summary_text.delta`` (as
:class:`~scriptorium.llm.client.ReasoningChunk` pieces). A stream is complete only at
``response.completed`` or ``response.incomplete``, whose ``response`` object is then read by
:func:`~scriptorium.llm.openai.responses_call.read_response`, the reader of a plain answer, so
both paths give the same result; ``response.failed`` and an ``error`` event are the server's
failure. A stream that ends any other way is cut off (``reason="connection"`` with the text so
far: the shared loop's rule).
"""

from __future__ import annotations

import json
from typing import Any

from scriptorium.llm.client import ReasoningChunk
from scriptorium.llm.openai.responses_call import ResponsesCall
from scriptorium.llm.openai.stream import Source
from scriptorium.llm.streaming import ErrorEvent, event_json

__all__ = ["ENDS", "ResponsesFold", "ResponsesSource"]

#: The events that end a complete stream (``response.failed`` ends one that failed).
ENDS = ("response.completed", "response.incomplete")
_TEXT = ("response.output_text.delta", "response.refusal.delta")
_ARGUMENTS = "response.function_call_arguments.delta"
_SUMMARY = "response.reasoning_summary_text.delta"


class ResponsesFold:
    """Folds the events of one streamed response; ``complete`` once it ended."""

    __slots__ = ("arguments", "complete", "reasoning", "response", "text")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.arguments: list[str] = []
        self.response: dict[str, Any] | None = None
        self.complete = False

    def add(self, name: str | None, data: str) -> list[str] | None:
        """Take one event; the pieces it adds (reasoning as ``ReasoningChunk``, then text)."""
        if data.strip() == "[DONE]":
            return None  # a compatible server's Chat Completions habit: not this API's ending
        event = event_json(data)
        kind = event.get("type", name)
        if kind == "error" or (isinstance(event.get("error"), dict) and kind not in ENDS):
            error = event.get("error", event)
            raise ErrorEvent(error if isinstance(error, dict) else {"message": str(error)})
        if kind == "response.failed":
            failed = event.get("response")
            error = failed.get("error") if isinstance(failed, dict) else None
            raise ErrorEvent(error if isinstance(error, dict) else {"message": "response failed"})
        delta = event.get("delta")
        piece = delta if isinstance(delta, str) else ""
        if kind in ENDS:
            found = event.get("response")
            self.response = found if isinstance(found, dict) else {}
            self.complete = True
            return None
        if not piece:
            return None
        if kind == _SUMMARY:
            self.reasoning.append(piece)
            return [ReasoningChunk(piece)]
        if kind in _TEXT:
            self.text.append(piece)
            return [piece]
        if kind == _ARGUMENTS:
            self.arguments.append(piece)
            return [piece]
        return None

    def flush(self) -> str:
        """Nothing is held back: every delta is handed out as it comes."""
        return ""

    def body(self) -> bytes:
        """The ``response`` object the stream ended with, its output filled from the deltas
        when it came without one."""
        body = dict(self.response or {})
        if not body.get("output"):
            output: list[dict[str, Any]] = []
            if self.reasoning:
                summary = [{"type": "summary_text", "text": "".join(self.reasoning)}]
                output.append({"type": "reasoning", "summary": summary})
            if self.arguments:
                output.append({"type": "function_call", "arguments": "".join(self.arguments)})
            if self.text:
                text = {"type": "output_text", "text": "".join(self.text)}
                output.append({"type": "message", "role": "assistant", "content": [text]})
            body["output"] = output
        return json.dumps(body).encode("utf-8")


class ResponsesSource(Source):
    """The Responses API part of one streamed request (the chat :class:`Source` with this
    API's request and events)."""

    def __init__(self, call: ResponsesCall) -> None:
        super().__init__(call)
        self.params = {**call.params, "stream": True}

    def open(self, client: Any, timeout_s: float) -> Any:
        with self.call.wire.sending(client, self.params) as sent:
            return client.responses.create(**sent, timeout=timeout_s).response

    async def aopen(self, client: Any, timeout_s: float) -> Any:
        with self.call.wire.sending(client, self.params) as sent:
            return (await client.responses.create(**sent, timeout=timeout_s)).response

    def fold(self) -> ResponsesFold:  # type: ignore[override]
        return ResponsesFold()
