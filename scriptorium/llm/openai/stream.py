"""Streaming for the ``openai`` adapter: Chat Completions with ``stream=True`` and
``stream_options.include_usage``, read by the shared loop of :mod:`scriptorium.llm.streaming`.

The SDK sends the request (auth, headers and error statuses stay the SDK's) and hands back the
HTTP response unread. What this module adds to the shared loop is the Chat Completions part:
:class:`Fold` reads the chunks back into the ``chat.completion`` body a non-streamed request
would have returned, and that body goes through
:func:`~scriptorium.llm.openai.call.read_completion`, so text, finish reason, usage and metadata are read by one piece of code for both paths. The
deltas are the message content (the tool call's arguments with the ``tool`` strategy; a refusal's
text when the model refuses). The terminator is the pair the API ends every stream with: a
finish reason, then ``data: [DONE]``; a chunk with an ``error`` object is the server's failure,
classified by :func:`~scriptorium.llm.openai.sdk.classify`. Reasoning text an OpenAI-compatible
server streams (a delta's ``reasoning_content`` or ``reasoning``) is handed out as
:class:`~scriptorium.llm.client.ReasoningChunk` pieces and folded into the body's message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scriptorium.llm.adapter import CallSource
from scriptorium.llm.client import ReasoningChunk
from scriptorium.llm.openai.call import REASONING_FIELDS, Call, Result
from scriptorium.llm.openai.sdk import auth_headers
from scriptorium.llm.streaming import (
    ErrorEvent,
    EventReader,
    event_json,
    sse_events,
)

__all__ = ["DONE", "Fold", "Source"]

#: The data of the event that ends every Chat Completions stream.
DONE = "[DONE]"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _texts(value: Any) -> str:
    return value if isinstance(value, str) else ""


class Fold:
    """Folds streamed chunks into the ``chat.completion`` body they add up to; ``complete`` once
    a finish reason and then ``[DONE]`` were read."""

    __slots__ = (
        "args",
        "complete",
        "content",
        "finish",
        "ident",
        "model",
        "name",
        "reasoning",
        "refusal",
        "tool",
        "usage",
    )

    def __init__(self, tool: bool = False) -> None:
        #: Whether the answer is a forced tool call's arguments (the ``tool`` strategy): only
        #: then are they text; otherwise a call adds nothing to the text, as unstreamed.
        self.tool = tool
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.refusal: list[str] = []
        self.args: list[str] = []
        self.name: str | None = None
        self.finish: str | None = None
        self.usage: Any = None
        self.model: str | None = None
        self.ident: str | None = None
        self.complete = False

    def add(self, name: str | None, data: str) -> list[str] | None:
        """Take one event; the pieces it adds (its reasoning as a ``ReasoningChunk``, then its
        text), if any."""
        if data.strip() == DONE:
            # The end the API promises; without a finish reason before it the answer was cut
            # short all the same (the stream then ends incomplete).
            self.complete = self.finish is not None
            return None
        chunk = event_json(data)
        if "error" in chunk:
            error = chunk["error"]
            raise ErrorEvent(error if isinstance(error, dict) else {"message": str(error)})
        # The stream's model is the first non-empty one it names (Azure's first chunk, the
        # prompt filter's results, names none); its id comes from the same chunk.
        if not self.model and isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
            self.ident = chunk.get("id") if isinstance(chunk.get("id"), str) else self.ident
        elif self.ident is None and isinstance(chunk.get("id"), str) and chunk["id"]:
            self.ident = chunk["id"]
        if chunk.get("usage") is not None:
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices:
            return None
        choice = _dict(choices[0])
        if isinstance(choice.get("finish_reason"), str):
            self.finish = choice["finish_reason"]
        delta = _dict(choice.get("delta"))
        pieces: list[str] = []
        thought = next((t for n in REASONING_FIELDS if (t := _texts(delta.get(n)))), "")
        if thought:
            self.reasoning.append(thought)
            pieces.append(ReasoningChunk(thought))
        # The answer's text: the content, else a refusal's text, else the tool call's arguments
        # (one delta carries one of them; the last one given stands, as it always did).
        text: str | None = None
        content = _texts(delta.get("content"))
        if content:
            self.content.append(content)
            text = content
        refusal = _texts(delta.get("refusal"))
        if refusal:
            self.refusal.append(refusal)
            text = refusal
        calls = delta.get("tool_calls")
        if isinstance(calls, list) and calls:
            function = _dict(_dict(calls[0]).get("function"))
            if _texts(function.get("name")):
                self.name = function["name"]
            arguments = _texts(function.get("arguments"))
            if arguments:
                self.args.append(arguments)
                text = arguments if self.tool else text
        if text:
            pieces.append(text)
        return pieces or None

    def flush(self) -> str:
        """Nothing is held back: every delta is handed out as it comes."""
        return ""

    def body(self) -> bytes:
        """The completion these chunks spelled out, as the bytes of a non-streamed 200."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self.content) if self.content else None,
            "refusal": "".join(self.refusal) if self.refusal else None,
        }
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
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
    """Stands for the raw HTTP response :meth:`Call.read` takes: a body and the headers."""

    __slots__ = ("content", "headers")

    def __init__(self, content: bytes, headers: Any) -> None:
        self.content = content
        self.headers = headers


class Source(CallSource[Result]):
    """The Chat Completions part of one streamed request (see
    :class:`~scriptorium.llm.streaming.StreamSource`)."""

    call: Call

    def __init__(self, call: Call) -> None:
        super().__init__(call)
        # The call's parameters asking for a stream that ends with a usage chunk.
        self.params = {**call.params, "stream": True, "stream_options": {"include_usage": True}}

    def open(self, client: Any, timeout_s: float) -> Any:
        """Send the parameters (media spliced in as they are sent); the HTTP response, unread
        (the SDK's typed stream is not read)."""
        with self.call.wire.sending(client, self.params) as sent:
            return client.chat.completions.create(
                **sent, timeout=timeout_s, extra_headers=auth_headers(self.key)
            ).response

    async def aopen(self, client: Any, timeout_s: float) -> Any:
        with self.call.wire.sending(client, self.params) as sent:
            created = await client.chat.completions.create(
                **sent, timeout=timeout_s, extra_headers=auth_headers(self.key)
            )
            return created.response

    def fold(self) -> Fold:
        return Fold(self.call.strategy == "tool")

    def events(self, headers: Mapping[str, str]) -> EventReader | None:
        return sse_events(headers)

    def folded(self, fold: Any, headers: Mapping[str, str]) -> Result:
        # Either API's fold (this module's or the Responses API's): the body it spelled out.
        return self.call.read(_Raw(fold.body(), headers))

    def read_body(self, content: bytes, headers: Mapping[str, str]) -> Result:
        return self.call.read(_Raw(content, headers))
