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
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

from scriptorium._testing.http import Answer, RecordedRequest, ScriptedHTTPServer

__all__ = ["FakeAnthropicServer", "RecordedRequest"]

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
        #: What ``count_tokens`` answers (None: an estimate from the body); its requests.
        self.count_tokens: int | None = None
        self.count_requests: list[RecordedRequest] = []

    @property
    def url(self) -> str:
        """The base URL to give the SDK (``http://127.0.0.1:<port>``)."""
        return self.base_url

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
    ) -> None:
        """Queue a 200 with one text block."""
        extra = dict(headers or {})

        def build(req: RecordedRequest) -> Answer:
            content = [{"type": "text", "text": text}]
            body = _message_body(req, content, stop_reason, usage, model, self._next_id())
            return Answer.json(body, headers=extra)

        self.push(build, delay_s)

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
            return Answer.json(
                _message_body(req, [block], stop_reason, usage, None, self._next_id())
            )

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
        return Answer.json(
            _message_body(request, content, "end_turn", usage, None, self._next_id())
        )

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
