"""Streaming for the ``gemini`` adapter: ``streamGenerateContent?alt=sse``, read by the shared
loop of :mod:`scriptorium.llm.streaming`.

The SDK's request layer sends the request (URL, auth, error statuses stay the SDK's) and hands
back the HTTP response unread. What this module adds to the shared loop is Gemini's part:
:class:`Fold` reads the chunks (each a ``GenerateContentResponse``) back into the one response a
non-streamed request would have returned, and that goes through
:func:`~scriptorium.llm.gemini.call.read_answer`, so text, reasoning, finish reason and usage are
read by one piece of code for both paths. Thought parts (``"thought": true``) are handed out as
:class:`~scriptorium.llm.client.ReasoningChunk` pieces; a chunk carrying thoughts and answer
text both hands out the thoughts, then the text.

The terminator is Gemini's "this answer is complete": a chunk whose candidate has a
``finishReason`` (or whose ``promptFeedback`` blocks the prompt). A stream that ends without one
is a connection failure with the text so far. A chunk holding an ``error`` object is the
server's failure, classified by :func:`~scriptorium.llm.gemini.sdk.classify`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scriptorium.llm.adapter import CallSource
from scriptorium.llm.client import ReasoningChunk
from scriptorium.llm.gemini.call import Answer, Call, call_args, read_answer
from scriptorium.llm.streaming import (
    ErrorEvent,
    EventReader,
    event_json,
    sse_events,
)

__all__ = ["Fold", "Source"]


class Fold:
    """Folds streamed ``GenerateContentResponse`` chunks into the one they add up to;
    ``complete`` once a chunk carried a finish reason (or blocked the prompt)."""

    __slots__ = (
        "calls",
        "complete",
        "feedback",
        "finish",
        "ident",
        "model",
        "text",
        "thoughts",
        "tool",
        "usage",
    )

    def __init__(self, tool: bool = False) -> None:
        #: Whether a function call's arguments are the answer (the ``tool`` strategy); else a
        #: call adds nothing to the text, as unstreamed.
        self.tool = tool
        self.text: list[str] = []
        self.thoughts: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.finish: str | None = None
        self.usage: Any = None
        self.model: str | None = None
        self.ident: str | None = None
        self.feedback: Any = None
        self.complete = False

    def add(self, name: str | None, data: str) -> list[str] | None:
        """Take one event; the pieces it adds, in order: its thoughts as one
        :class:`ReasoningChunk`, then its text (or a forced call's arguments)."""
        chunk = event_json(data)
        if "error" in chunk:
            raise ErrorEvent(chunk)
        if not self.model and isinstance(chunk.get("modelVersion"), str):
            self.model = chunk["modelVersion"] or None  # the first non-empty name stands
        if isinstance(chunk.get("responseId"), str):
            self.ident = chunk["responseId"]
        if isinstance(chunk.get("usageMetadata"), dict):
            self.usage = chunk["usageMetadata"]
        feedback = chunk.get("promptFeedback")
        if isinstance(feedback, dict):
            self.feedback = feedback
            if isinstance(feedback.get("blockReason"), str):
                self.complete = True
        candidates = chunk.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            return None
        candidate = candidates[0] if isinstance(candidates[0], dict) else {}
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        text: list[str] = []
        thoughts: list[str] = []
        called: list[str] = []
        for part in parts if isinstance(parts, list) else ():
            args = call_args(part) if isinstance(part, dict) else None
            if args is not None:
                self.calls.append(part)
                called.append(args)
                continue
            piece = part.get("text") if isinstance(part, dict) else None
            if isinstance(piece, str) and piece:
                (thoughts if part.get("thought") is True else text).append(piece)
        self.text.extend(text)
        self.thoughts.extend(thoughts)
        if isinstance(candidate.get("finishReason"), str):
            self.finish = candidate["finishReason"]
            self.complete = True
        pieces: list[str] = []
        if thoughts:
            pieces.append(ReasoningChunk("".join(thoughts)))
        if self.tool and self.calls:
            # A forced call's arguments are the output of the tool strategy (they come whole).
            if called:
                pieces.append("".join(called))
        elif text:
            pieces.append("".join(text))
        return pieces or None

    def flush(self) -> str:
        """Nothing is held back: every piece is handed out as it comes."""
        return ""

    def body(self) -> dict[str, Any]:
        """The ``GenerateContentResponse`` these chunks spelled out."""
        parts: list[dict[str, Any]] = []
        if self.thoughts:
            parts.append({"text": "".join(self.thoughts), "thought": True})
        if self.text:
            parts.append({"text": "".join(self.text)})
        parts.extend(self.calls)
        body: dict[str, Any] = {}
        if self.finish is not None or parts:
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
            if self.finish is not None:
                candidate["finishReason"] = self.finish
            body["candidates"] = [candidate]
        if self.feedback is not None:
            body["promptFeedback"] = self.feedback
        if self.usage is not None:
            body["usageMetadata"] = self.usage
        if self.model is not None:
            body["modelVersion"] = self.model
        if self.ident is not None:
            body["responseId"] = self.ident
        return body


class Source(CallSource[Answer]):
    """Gemini's part of one streamed request (see
    :class:`~scriptorium.llm.streaming.StreamSource`)."""

    call: Call

    def __init__(self, call: Call) -> None:
        super().__init__(call)
        self.path = f"{call.path}:streamGenerateContent?alt=sse"

    def open(self, client: Any, timeout_s: float) -> Any:
        """Send the request; the HTTP response, unread (an error status raises the SDK's
        ``APIError``, its body read)."""
        api = client.api
        sent = api._build_request(
            "post", self.path, dict(self.call.body), self.call.options(timeout_s)
        )
        return api._request_once(sent, stream=True).response_stream

    async def aopen(self, client: Any, timeout_s: float) -> Any:
        api = client.api
        sent = api._build_request(
            "post", self.path, dict(self.call.body), self.call.options(timeout_s)
        )
        return (await api._async_request_once(sent, stream=True)).response_stream

    def fold(self) -> Fold:
        return Fold(self.call.strategy == "tool")

    def events(self, headers: Mapping[str, str]) -> EventReader | None:
        """Server-sent events, when the headers say the body is a stream."""
        return sse_events(headers)

    def folded(self, fold: Fold, headers: Mapping[str, str]) -> Answer:
        return self.call.read(fold.body(), headers)

    def read_body(self, content: bytes, headers: Mapping[str, str]) -> Answer:
        """A 200 that is no event stream: a whole answer (a JSON array of chunks, as the API
        answers without ``alt=sse``, is folded first)."""
        try:
            value = json.loads(content)
        except ValueError:
            value = None
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            fold = Fold(self.call.strategy == "tool")
            for item in value:
                fold.add(None, json.dumps(item))
            if not fold.complete:
                return read_answer(b"[]")
            return self.call.read(fold.body(), headers)
        return self.call.read(content, headers)
