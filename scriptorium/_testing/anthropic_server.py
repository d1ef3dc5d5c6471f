"""``FakeAnthropicServer``: a loopback HTTP server speaking enough of the Messages API for the real
``anthropic`` SDK to be tested end to end, with scripted responses and faults.

    with FakeAnthropicServer() as server:
        server.fail(429, headers={"retry-after": "1"})
        server.reply(text="hello", usage={"input_tokens": 12, "output_tokens": 3})
        client = anthropic.Anthropic(api_key="k", base_url=server.url, max_retries=0)
        ...
        server.requests[-1].body["messages"]

Each ``POST /v1/messages`` consumes the next scripted step; with the script empty the server
answers with its default reply (``default_text``), or a 500 when that is None. Steps can be
delayed; ``reset_connection`` drops the connection (TCP reset) without answering; ``malformed``
sends raw bytes as a 200. Every answer carries a ``request-id`` header, as Anthropic's do. Serving,
recording and the generic steps live in the shared core, :mod:`scriptorium._testing.http`.

A request with ``"stream": true`` gets the same replies as server-sent events (``message_start``,
``content_block_start``, a ``content_block_delta`` per chunk, ``message_delta``, ``message_stop``):
``chunks`` says how the text is cut and ``pace_s`` how long to wait before each chunk.

``reply(thinking=..., redacted=..., thinking_tokens=...)`` answers as a model that thought: its
``thinking`` blocks (with a signature) and ``redacted_thinking`` blocks come before the text, and
``usage.output_tokens_details.thinking_tokens`` says how many output tokens they took; streamed,
each thinking block is ``thinking_delta`` events then a ``signature_delta``.
``fail_midstream`` sends some text and then an ``error`` event; ``reset_midstream`` some text and
then a dropped connection.

The Message Batches endpoints (``/v1/messages/batches``: create, retrieve, list, results, cancel)
are served too; ``server.batches`` scripts them (how many polls a batch runs, rows that error,
expire or are canceled, result order) and records every batch created.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from scriptorium._testing.anthropic_batches import AnthropicBatchRoutes
from scriptorium._testing.batches import FakeBatches
from scriptorium._testing.http import (
    RESET,
    Answer,
    Chunks,
    RecordedRequest,
    ScriptedHTTPServer,
    sse,
    text_pieces,
)

__all__ = ["FakeAnthropicServer", "RecordedRequest", "thinking_blocks"]

DEFAULT_USAGE: dict[str, int] = {"input_tokens": 10, "output_tokens": 5}
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"

# The error type Anthropic sends with each status, used when a test names only the status.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _message_body(
    request: RecordedRequest,
    content: list[dict[str, Any]],
    stop_reason: str | None,
    usage: Mapping[str, Any] | None,
    model: str | None,
    ident: str,
) -> dict[str, Any]:
    asked = request.body.get("model") if isinstance(request.body, dict) else None
    return {
        "id": ident,
        "type": "message",
        "role": "assistant",
        "model": model or asked or "claude-fake",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": dict(DEFAULT_USAGE if usage is None else usage),
    }


def _pieces(text: str, chunks: Chunks | None) -> list[str]:
    # One empty piece for an empty text: the fake still sends a text delta.
    return text_pieces(text, chunks) or [""]


def _streams(request: RecordedRequest) -> bool:
    return isinstance(request.body, dict) and request.body.get("stream") is True


def _block_events(index: int, block: dict[str, Any], pace_s: float) -> list[tuple[float, bytes]]:
    """A thinking or redacted thinking block as its stream events, stop included."""
    if block["type"] == "redacted_thinking":
        opening: dict[str, Any] = block
        deltas: list[dict[str, Any]] = []
    else:
        opening = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"], None)
        ]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    start = {"type": "content_block_start", "index": index, "content_block": opening}
    events = [(0.0, sse("content_block_start", start))]
    for delta in deltas:
        event = {"type": "content_block_delta", "index": index, "delta": delta}
        events.append((pace_s, sse("content_block_delta", event)))
    events.append((0.0, sse("content_block_stop", {"type": "content_block_stop", "index": index})))
    return events


def _sse_message(
    body: dict[str, Any],
    pieces: list[str],
    pace_s: float,
    tail: list[tuple[float, bytes]] | None = None,
) -> Answer:
    """``body`` (a Messages API message) as the events a streaming request gets: its thinking
    blocks first, then its answer block in ``pieces``. ``tail``, when given, replaces everything
    after the answer's chunks (an error event, a reset)."""
    usage = dict(body["usage"])
    start = {**body, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    parts: list[tuple[float, bytes]] = [
        (0.0, sse("message_start", {"type": "message_start", "message": start}))
    ]
    thoughts = [b for b in body["content"] if b["type"] in ("thinking", "redacted_thinking")]
    for index, thought in enumerate(thoughts):
        parts.extend(_block_events(index, thought, pace_s))
    answer = [b for b in body["content"] if b not in thoughts]
    index = len(thoughts)
    block = answer[0] if answer else {"type": "text", "text": ""}
    if block["type"] == "tool_use":
        opening = {**block, "input": {}}
        delta_type, field = "input_json_delta", "partial_json"
    else:
        opening = {"type": "text", "text": ""}
        delta_type, field = "text_delta", "text"
    parts.append(
        (
            0.0,
            sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            ),
        )
    )
    parts.append((0.0, sse("ping", {"type": "ping"})))
    for piece in pieces:
        delta = {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": delta_type, field: piece},
        }
        parts.append((pace_s, sse("content_block_delta", delta)))
    if tail is not None:
        return Answer(parts=(*parts, *tail), content_type="text/event-stream")
    stop = {"type": "content_block_stop", "index": index}
    parts.append((0.0, sse("content_block_stop", stop)))
    counts: dict[str, Any] = {"output_tokens": usage.get("output_tokens", 0)}
    if "output_tokens_details" in usage:
        counts["output_tokens_details"] = usage["output_tokens_details"]
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
        "usage": counts,
    }
    parts.append((0.0, sse("message_delta", end)))
    parts.append((0.0, sse("message_stop", {"type": "message_stop"})))
    return Answer(parts=tuple(parts), content_type="text/event-stream")


def thinking_blocks(
    thinking: str | Sequence[str] | None, redacted: int = 0
) -> list[dict[str, Any]]:
    """The content blocks of a model that thought: one ``thinking`` block per text (each with a
    signature), then ``redacted`` ``redacted_thinking`` blocks."""
    texts = [thinking] if isinstance(thinking, str) else list(thinking or ())
    blocks: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": text, "signature": f"sig-fake-{i}"}
        for i, text in enumerate(texts)
    ]
    blocks.extend(
        {"type": "redacted_thinking", "data": f"encrypted-fake-{i}"} for i in range(redacted)
    )
    return blocks


class FakeAnthropicServer(ScriptedHTTPServer):
    """A scripted Messages API on ``127.0.0.1``; use as a context manager; ``url`` is the base URL.

    ``latency_s`` delays every answer; ``default_text`` is what an empty script answers (None: a
    500 error) with ``default_usage``; ``record=False`` keeps no ``requests`` (long benchmarks).
    ``reset()`` forgets the script and the requests, to reuse one server across tests.
    """

    paths = ("/v1/messages",)

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        default_text: str | None = "ok",
        default_usage: Mapping[str, int] | None = None,
        record: bool = True,
    ) -> None:
        super().__init__(latency_s=latency_s, record=record)
        self.default_text = default_text
        self.default_usage = dict(default_usage or DEFAULT_USAGE)
        # One counter numbers both message ids and request ids, so every id is unique.
        self._ids = itertools.count(1)
        #: The Message Batches the server holds, and their script.
        self.batches = FakeBatches("msgbatch_fake_", self._batch_answer)
        self._batch_routes = AnthropicBatchRoutes(self.batches, lambda: self.base_url)
        #: What ``count_tokens`` answers (None: an estimate from the body); its requests.
        self.count_tokens: int | None = None
        self.count_requests: list[RecordedRequest] = []
        #: A status the counting route answers instead (404, 500: a gateway without the route).
        self.count_tokens_status: int | None = None

    @property
    def url(self) -> str:
        """The base URL to give the SDK (``http://127.0.0.1:<port>``)."""
        return self.base_url

    def streams(self, request: RecordedRequest) -> bool:
        """Whether ``request`` asks for a streamed answer (``"stream": true``; a platform may say
        it by its path)."""
        return _streams(request)

    def _next_id(self) -> str:
        return f"msg_fake_{next(self._ids)}"

    # --- scripting -------------------------------------------------------------------------------

    def reply(
        self,
        text: str = "ok",
        *,
        usage: Mapping[str, Any] | None = None,
        stop_reason: str | None = "end_turn",
        model: str | None = None,
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
        chunks: Chunks | None = None,
        pace_s: float = 0.0,
        thinking: str | Sequence[str] | None = None,
        redacted: int = 0,
        thinking_tokens: int | None = None,
    ) -> None:
        """Queue a 200 with one text block (streamed in ``chunks``, ``pace_s`` apart, when the
        request asks for a stream), after the ``thinking`` blocks (a text or several) and
        ``redacted`` redacted ones; ``thinking_tokens`` goes in the usage's
        ``output_tokens_details``."""
        extra = dict(headers or {})
        counts = dict(DEFAULT_USAGE if usage is None else usage)
        if thinking_tokens is not None:
            counts["output_tokens_details"] = {"thinking_tokens": thinking_tokens}

        def build(req: RecordedRequest) -> Answer:
            content = [*thinking_blocks(thinking, redacted), {"type": "text", "text": text}]
            body = _message_body(req, content, stop_reason, counts, model, self._next_id())
            if self.streams(req):
                answer = _sse_message(body, _pieces(text, chunks), pace_s)
                return Answer(parts=answer.parts, headers=extra, content_type=answer.content_type)
            return Answer.json(body, headers=extra)

        self.push(build, delay_s)

    def fail_midstream(
        self,
        text: str = "",
        *,
        error_type: str = "overloaded_error",
        message: str = "scripted failure mid-stream",
        chunks: Chunks | None = None,
        pace_s: float = 0.0,
    ) -> None:
        """Queue a stream that sends ``text`` and then an ``error`` event (a request that does not
        stream gets the error's usual status instead)."""
        error = _error(error_type, message)
        status = next((k for k, v in _ERROR_TYPES.items() if v == error_type), 500)

        def build(req: RecordedRequest) -> Answer:
            if not self.streams(req):
                return Answer.json(error, status=status)
            body = _message_body(req, [], "end_turn", None, None, self._next_id())
            tail = [(0.0, sse("error", error))]
            return _sse_message(body, _pieces(text, chunks) if text else [], pace_s, tail)

        self.push(build)

    def reset_midstream(
        self, text: str = "", *, chunks: Chunks | None = None, pace_s: float = 0.0
    ) -> None:
        """Queue a stream that sends ``text`` and then drops the connection (TCP reset)."""

        def build(req: RecordedRequest) -> Answer:
            if not self.streams(req):
                return Answer(reset=True)
            body = _message_body(req, [], "end_turn", None, None, self._next_id())
            return _sse_message(body, _pieces(text, chunks) if text else [], pace_s, [(0.0, RESET)])

        self.push(build)

    def reply_tool(
        self,
        input: Any,
        *,
        name: str | None = None,
        usage: Mapping[str, int] | None = None,
        stop_reason: str | None = "tool_use",
        delay_s: float = 0.0,
    ) -> None:
        """Queue a 200 with a ``tool_use`` block (``name`` defaults to the request's forced tool)."""

        def build(req: RecordedRequest) -> Answer:
            chosen = name
            if chosen is None and isinstance(req.body, dict):
                choice = req.body.get("tool_choice")
                chosen = choice.get("name") if isinstance(choice, dict) else None
            block = {
                "type": "tool_use",
                "id": "toolu_fake",
                "name": chosen or "output",
                "input": input,
            }
            body = _message_body(req, [block], stop_reason, usage, None, self._next_id())
            if self.streams(req):
                raw = json.dumps(input, ensure_ascii=False)
                return _sse_message(body, _pieces(raw, None), 0.0)
            return Answer.json(body)

        self.push(build, delay_s)

    def fail(
        self,
        status: int,
        *,
        body: Any = None,
        error_type: str | None = None,
        message: str = "scripted failure",
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """Queue an error status. Without ``body``, an Anthropic-shaped error with ``error_type``
        (default: the type Anthropic uses for that status)."""
        if body is None:
            body = _error(error_type or _ERROR_TYPES.get(status, "api_error"), message)
        self.reply_json(body, status=status, headers=headers, delay_s=delay_s)

    def delay(self, seconds: float, text: str = "ok") -> None:
        """Queue a reply sent only after ``seconds`` (a client with a shorter timeout gives up)."""
        self.reply(text, delay_s=seconds)

    # --- serving ---------------------------------------------------------------------------------

    def default_answer(self, request: RecordedRequest) -> Answer:
        """``default_text`` as a message with ``default_usage``, or a 500 when it is None."""
        if self.default_text is None:
            return Answer.json(_error("api_error", "script exhausted"), status=500)
        content = [{"type": "text", "text": self.default_text}]
        usage = self.default_usage
        body = _message_body(request, content, "end_turn", usage, None, self._next_id())
        if self.streams(request):
            return _sse_message(body, _pieces(self.default_text, None), 0.0)
        return Answer.json(body)

    def not_found(self, request: RecordedRequest) -> Answer:
        """An Anthropic-shaped 404 naming the path; ``/v1/messages/count_tokens`` is served here,
        outside the script (see :meth:`count_tokens_answer`)."""
        if request.path.split("?")[0].rstrip("/") == COUNT_TOKENS_PATH:
            with self._lock:
                self.count_requests.append(request)
            return self.count_tokens_answer(request)
        return Answer.json(_error("not_found_error", request.path), status=404)

    def count_tokens_answer(self, request: RecordedRequest) -> Answer:
        """``{"input_tokens": n}``: ``count_tokens`` when set, else one token per four characters
        of the body's system and messages (a stand-in, deterministic for tests)."""
        if self.count_tokens_status is not None:
            kind = _ERROR_TYPES.get(self.count_tokens_status, "api_error")
            return Answer.json(_error(kind, "no counting here"), status=self.count_tokens_status)
        if self.count_tokens is not None:
            return Answer.json({"input_tokens": self.count_tokens})
        body = request.body if isinstance(request.body, dict) else {}
        if "model" not in body or "messages" not in body:
            return Answer.json(_error("invalid_request_error", "model and messages required"), 400)
        text = json.dumps([body.get("system"), body.get("messages")], ensure_ascii=False)
        return Answer.json({"input_tokens": max(1, len(text) // 4)})

    def response_headers(self) -> Mapping[str, str]:
        """A fresh ``request-id`` on every answer, as the SDK reads it."""
        return {"request-id": f"req_fake_{next(self._ids)}"}

    def route(self, request: RecordedRequest) -> Answer | None:
        """The Message Batches endpoints."""
        return self._batch_routes.answer(request)

    def clear(self) -> None:
        """Forget the script, the recorded requests and every batch."""
        super().clear()
        self.batches.clear()

    def _batch_answer(self, custom_id: str, params: Any) -> tuple[int, Any]:
        """A batch row answered as the same body sent to ``/v1/messages`` would be: by
        ``batches.text`` when set, else by the next scripted step or the default answer."""
        request = RecordedRequest("POST", "/v1/messages", {}, params, b"")
        text_for = self.batches.text
        if text_for is not None:
            content = [{"type": "text", "text": text_for(custom_id, params)}]
            body: Any = _message_body(
                request, content, "end_turn", self.default_usage, None, self._next_id()
            )
            status = 200
        else:
            answer = self.answer_unsent(request)
            status, body = answer.status, _json_or_text(answer.body)
        counts = body.get("usage") if isinstance(body, dict) else None
        if status == 200 and isinstance(counts, dict):
            counts["service_tier"] = "batch"  # as the API reports a batch message
        return status, body


def _json_or_text(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")
