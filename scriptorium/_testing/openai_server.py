"""``FakeOpenAIServer``: a loopback server speaking OpenAI's Chat Completions API, so the real
``openai`` SDK can be tested end to end with scripted responses and faults.

    with FakeOpenAIServer() as server:
        server.fail(429, code="rate_limit_exceeded", headers={"retry-after": "1"})
        server.reply("hello", prompt_tokens=12, completion_tokens=3)
        client = openai.OpenAI(api_key="k", base_url=server.url, max_retries=0)
        ...
        server.requests[-1].body["messages"]

Each ``POST /v1/chat/completions`` consumes the next scripted step; with the script empty the
server answers ``default_text`` (or a 500 when that is None). The scripting vocabulary is the same
as ``FakeAnthropicServer``'s: ``reply``, ``reply_tool``, ``reply_json``, ``fail``, ``malformed``,
``reset_connection``, ``delay``.

A request with ``"stream": true`` gets the same replies as ``chat.completion.chunk`` server-sent
events ending in ``data: [DONE]`` (with a usage chunk when ``stream_options.include_usage`` asks for
one): ``chunks`` says how the text is cut and ``pace_s`` how long to wait before each chunk.

``reply(reasoning_tokens=...)`` reports reasoning as OpenAI does
(``usage.completion_tokens_details.reasoning_tokens``, counted inside ``completion_tokens``);
``reply(reasoning=...)`` adds reasoning text as OpenAI-compatible servers send it
(``message.reasoning_content``; streamed as ``delta.reasoning_content`` chunks before the text).
``fail_midstream`` sends some text and then an error chunk; ``reset_midstream`` some text and then
a dropped connection.

``POST /v1/responses`` is the Responses API, answered from the same script: each reply is turned
into a ``response`` object, or streamed as the Responses API's events ending in
``response.completed`` / ``response.incomplete`` (see ``openai_responses``). Its input-token
count, ``POST /v1/responses/input_tokens``, is served outside the script: ``count_tokens`` when
set, else one token per four characters of the body, or the status ``count_tokens_status``.

The Files and Batch endpoints (``/v1/files``, ``/v1/batches``) are served too, for batches of
``/v1/chat/completions`` or ``/v1/responses``; ``server.batches`` scripts how batches run and how
their rows end, and records every batch created.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

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
from scriptorium._testing.openai_batches import OpenAIBatchRoutes
from scriptorium._testing.openai_responses import (
    COUNT_SUFFIX,
    as_response,
    error_event,
    is_responses,
    response_events,
)

__all__ = ["FakeOpenAIServer", "RecordedRequest", "completion_body"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    429: "requests",
    500: "server_error",
    503: "server_error",
}


def completion_body(
    message: Mapping[str, Any],
    *,
    model: str,
    finish_reason: str | None,
    usage: Mapping[str, Any] | None,
    ident: str = "chatcmpl-fake",
) -> dict[str, Any]:
    """A ``chat.completion`` object with one choice carrying ``message``."""
    body: dict[str, Any] = {
        "id": ident,
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": dict(message), "finish_reason": finish_reason}],
    }
    if usage is not None:
        body["usage"] = dict(usage)
    return body


def _usage(
    prompt: int, completion: int, cached: int | None, reasoning: int | None = None
) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return usage


def _asked_model(request: RecordedRequest) -> str:
    model = request.body.get("model") if isinstance(request.body, dict) else None
    return model if isinstance(model, str) else "gpt-fake"


def _streams(request: RecordedRequest) -> bool:
    return isinstance(request.body, dict) and request.body.get("stream") is True


def _wants_usage(request: RecordedRequest) -> bool:
    options = request.body.get("stream_options") if isinstance(request.body, dict) else None
    return isinstance(options, dict) and options.get("include_usage") is True


def _sse_completion(
    request: RecordedRequest,
    body: dict[str, Any],
    pieces: list[str],
    pace_s: float,
    tail: list[tuple[float, bytes]] | None = None,
) -> Answer:
    """``body`` (a chat completion) as the chunks a streaming request gets; ``tail``, when given,
    replaces everything after the text (an error chunk, a reset)."""
    head = {k: body[k] for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse(None, {**head, "choices": [choice]})

    message = body["choices"][0]["message"]
    calls = message.get("tool_calls")
    parts: list[tuple[float, bytes]] = [(0.0, chunk({"role": "assistant", "content": ""}))]
    thought = message.get("reasoning_content")
    for piece in text_pieces(thought, None) if isinstance(thought, str) else ():
        parts.append((pace_s, chunk({"reasoning_content": piece})))
    if calls:
        call = calls[0]
        opening = {"index": 0, "id": call["id"], "type": "function"}
        opening["function"] = {"name": call["function"]["name"], "arguments": ""}
        parts.append((0.0, chunk({"tool_calls": [opening]})))
    for piece in pieces:
        if calls:
            delta: dict[str, Any] = {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
        elif message.get("refusal"):
            delta = {"refusal": piece}
        else:
            delta = {"content": piece}
        parts.append((pace_s, chunk(delta)))
    if tail is not None:
        return Answer(parts=(*parts, *tail), content_type="text/event-stream")
    parts.append((0.0, chunk({}, body["choices"][0]["finish_reason"])))
    if _wants_usage(request) and body.get("usage") is not None:
        parts.append((0.0, sse(None, {**head, "choices": [], "usage": body["usage"]})))
    parts.append((0.0, b"data: [DONE]\n\n"))
    return Answer(parts=tuple(parts), content_type="text/event-stream")


def _streamed_text(body: dict[str, Any]) -> str:
    message = body["choices"][0]["message"]
    calls = message.get("tool_calls")
    if calls:
        return str(calls[0]["function"]["arguments"])
    return str(message.get("content") or message.get("refusal") or "")


class FakeOpenAIServer(ScriptedHTTPServer):
    """A scripted Chat Completions API on ``127.0.0.1``; ``url`` (ending in ``/v1``) is the base
    URL for the SDK. ``latency_s`` delays every answer; ``record=False`` keeps no ``requests``."""

    paths = ("/v1/chat/completions", "/v1/responses")

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        default_text: str | None = "ok",
        record: bool = True,
    ) -> None:
        super().__init__(latency_s=latency_s, record=record)
        self.default_text = default_text
        self._ids = itertools.count(1)
        #: The batches the server holds, and their script.
        self.batches = FakeBatches("batch_fake", self._batch_answer)
        self._batch_routes = OpenAIBatchRoutes(self.batches)
        #: What the Responses API's input-token count answers (None: an estimate from the
        #: body, one token per four characters), or the error status it answers with.
        self.count_tokens: int | None = None
        self.count_tokens_status: int | None = None

    @property
    def url(self) -> str:
        """The base URL to give the SDK (``http://127.0.0.1:<port>/v1``)."""
        return f"{self.base_url}/v1"

    def reported_model(self, request: RecordedRequest) -> str:
        """The ``model`` an answer reports: the one the request asked for (a platform may
        report the model behind a deployment)."""
        return _asked_model(request)

    def _headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        # A header scripted as "" is left out: a gateway that sends no x-request-id of its own.
        headers = {"x-request-id": f"req_fake_{next(self._ids)}", **(extra or {})}
        return {name: value for name, value in headers.items() if value}

    # --- scripting -------------------------------------------------------------------------------

    def reply(
        self,
        text: str | None = "ok",
        *,
        finish_reason: str | None = "stop",
        prompt_tokens: int = 10,
        completion_tokens: int = 5,
        cached_tokens: int | None = None,
        usage: bool = True,
        refusal: str | None = None,
        model: str | None = None,
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
        chunks: Chunks | None = None,
        pace_s: float = 0.0,
        reasoning_tokens: int | None = None,
        reasoning: str | None = None,
    ) -> None:
        """Queue a 200 completion whose message content is ``text`` (``usage=False`` omits usage);
        streamed in ``chunks``, ``pace_s`` apart, when the request asks for a stream.
        ``reasoning_tokens`` goes in ``completion_tokens_details``; ``reasoning`` is the
        message's ``reasoning_content`` (a compatible server's reasoning text)."""
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": refusal}
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        counts = (
            _usage(prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens)
            if usage
            else None
        )

        def build(req: RecordedRequest) -> Answer:
            body = completion_body(
                message,
                model=model or self.reported_model(req),
                finish_reason=finish_reason,
                usage=counts,
            )
            return self._render(
                req, body, text_pieces(_streamed_text(body), chunks), pace_s, headers
            )

        self.push(build, delay_s)

    def reply_tool(
        self,
        arguments: str,
        *,
        name: str | None = None,
        finish_reason: str | None = "stop",
        prompt_tokens: int = 10,
        completion_tokens: int = 5,
        delay_s: float = 0.0,
    ) -> None:
        """Queue a 200 whose message is one tool call with ``arguments`` (a JSON string as the API
        sends it); ``name`` defaults to the request's forced function. Forced calls end in
        ``stop``."""

        def build(req: RecordedRequest) -> Answer:
            chosen = name
            if chosen is None and isinstance(req.body, dict):
                choice = req.body.get("tool_choice")
                function = choice.get("function") if isinstance(choice, dict) else None
                chosen = function.get("name") if isinstance(function, dict) else None
                if chosen is None and isinstance(choice, dict):  # the Responses API's flat form
                    chosen = choice.get("name") if isinstance(choice.get("name"), str) else None
            call = {
                "id": "call_fake",
                "type": "function",
                "function": {"name": chosen or "output", "arguments": arguments},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            body = completion_body(
                message,
                model=self.reported_model(req),
                finish_reason=finish_reason,
                usage=_usage(prompt_tokens, completion_tokens, None),
            )
            return self._render(req, body, text_pieces(arguments, None), 0.0, None)

        self.push(build, delay_s)

    def fail(
        self,
        status: int,
        *,
        code: str | None = None,
        error_type: str | None = None,
        message: str = "scripted failure",
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """Queue an error status. Without ``body``, an OpenAI-shaped error:
        ``{"error": {"message", "type", "param", "code"}}``."""
        if body is None:
            kind = error_type or _ERROR_TYPES.get(status, "server_error")
            body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        self.reply_json(body, status=status, headers=self._headers(headers), delay_s=delay_s)

    def fail_midstream(
        self,
        text: str = "",
        *,
        error_type: str = "server_error",
        code: str | None = None,
        message: str = "scripted failure mid-stream",
        chunks: Chunks | None = None,
        pace_s: float = 0.0,
    ) -> None:
        """Queue a stream that sends ``text`` and then an error chunk (a request that does not
        stream gets a 500 instead)."""
        error = {"error": {"message": message, "type": error_type, "param": None, "code": code}}

        def build(req: RecordedRequest) -> Answer:
            if not _streams(req):
                return Answer.json(error, status=500, headers=self._headers(None))
            body = completion_body(
                {"role": "assistant", "content": text},
                model=self.reported_model(req),
                finish_reason=None,
                usage=None,
            )
            tail = error_event(error["error"]) if is_responses(req) else sse(None, error)
            return self._render(req, body, text_pieces(text, chunks), pace_s, None, [(0.0, tail)])

        self.push(build)

    def reset_midstream(
        self, text: str = "", *, chunks: Chunks | None = None, pace_s: float = 0.0
    ) -> None:
        """Queue a stream that sends ``text`` and then drops the connection (TCP reset)."""

        def build(req: RecordedRequest) -> Answer:
            if not _streams(req):
                return Answer(reset=True)
            body = completion_body(
                {"role": "assistant", "content": text},
                model=self.reported_model(req),
                finish_reason=None,
                usage=None,
            )
            return self._render(req, body, text_pieces(text, chunks), pace_s, None, [(0.0, RESET)])

        self.push(build)

    def delay(self, seconds: float, text: str = "ok") -> None:
        """Queue a reply sent only after ``seconds`` (a client with a shorter timeout gives up)."""
        self.reply(text, delay_s=seconds)

    # --- defaults --------------------------------------------------------------------------------

    def default_answer(self, request: RecordedRequest) -> Answer:
        """``default_text`` as a completion, or a 500 when it is None."""
        if self.default_text is None:
            error = {"error": {"message": "script exhausted", "type": "server_error"}}
            return Answer.json(error, status=500)
        body = completion_body(
            {"role": "assistant", "content": self.default_text, "refusal": None},
            model=self.reported_model(request),
            finish_reason="stop",
            usage=_usage(10, 5, None),
        )
        return self._render(request, body, text_pieces(self.default_text, None), 0.0, None)

    def _render(
        self,
        request: RecordedRequest,
        body: dict[str, Any],
        pieces: list[str],
        pace_s: float,
        headers: Mapping[str, str] | None,
        tail: list[tuple[float, bytes]] | None = None,
    ) -> Answer:
        """A chat completion ``body`` as ``request`` gets it: plain or streamed, as a chat
        completion or (a request to ``/v1/responses``) as the Responses API's response."""
        responses = is_responses(request)
        if not _streams(request):
            plain = as_response(body) if responses else body
            return Answer.json(plain, headers=self._headers(headers))
        if responses:
            answer = response_events(as_response(body), pieces, pace_s, tail)
        else:
            answer = _sse_completion(request, body, pieces, pace_s, tail)
        return Answer(
            parts=answer.parts, headers=self._headers(headers), content_type=answer.content_type
        )

    # --- batches ---------------------------------------------------------------------------------

    def route(self, request: RecordedRequest) -> Answer | None:
        """The Files and Batch endpoints, and the Responses API's input-token count."""
        if request.path.split("?", 1)[0].rstrip("/").endswith(COUNT_SUFFIX):
            return self.count_answer(request)
        return self._batch_routes.answer(request)

    def count_answer(self, request: RecordedRequest) -> Answer:
        """``{"object": "response.input_tokens", "input_tokens": n}``: ``count_tokens`` when
        set, else one token per four characters of the body; or ``count_tokens_status``."""
        if self.count_tokens_status is not None:
            kind = _ERROR_TYPES.get(self.count_tokens_status, "server_error")
            error = {"error": {"message": "no counting here", "type": kind, "code": None}}
            return Answer.json(error, status=self.count_tokens_status)
        counted = self.count_tokens
        if counted is None:
            counted = max(1, len(request.raw) // 4)
        return Answer.json({"object": "response.input_tokens", "input_tokens": counted})

    def clear(self) -> None:
        """Forget the script, the recorded requests, every batch and file."""
        super().clear()
        self.batches.clear()
        self._batch_routes.clear()
        self.count_tokens = None
        self.count_tokens_status = None

    def _batch_answer(self, custom_id: str, params: Any) -> tuple[int, Any]:
        """A batch row answered as the same body sent to ``/v1/chat/completions`` would be: by
        ``batches.text`` when set, else by the next scripted step or the default answer."""
        # A row for the Responses API holds its input, one for Chat Completions its messages.
        responses = isinstance(params, dict) and "input" in params and "messages" not in params
        path = "/v1/responses" if responses else "/v1/chat/completions"
        request = RecordedRequest("POST", path, {}, params, b"")
        text_for = self.batches.text
        if text_for is None:
            answer = self.answer_unsent(request)
            try:
                return answer.status, json.loads(answer.body)
            except ValueError:
                return answer.status, answer.body.decode("utf-8", "replace")
        message = {"role": "assistant", "content": text_for(custom_id, params), "refusal": None}
        usage = _usage(10, 5, None)
        body = completion_body(
            message, model=self.reported_model(request), finish_reason="stop", usage=usage
        )
        return 200, as_response(body) if responses else body
