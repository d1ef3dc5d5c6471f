"""``FakeGeminiServer``: a loopback server speaking the Gemini API (and Vertex AI's paths for
it), so the real ``google-genai`` SDK can be tested end to end with scripted answers and faults.

    with FakeGeminiServer() as server:
        server.fail(429, headers={"retry-after": "1"})
        server.reply("hello", prompt_tokens=12, candidates_tokens=3)
        client = genai.Client(api_key="k", http_options={"base_url": server.url})
        ...
        server.requests[-1].body["contents"]

Each ``POST .../models/M:generateContent`` (or ``:streamGenerateContent``), under any API
version and also under Vertex AI's ``projects/P/locations/L/publishers/google/`` prefix, consumes
the next scripted step; with the script empty the server answers ``default_text`` (or a 500 when
that is None). The scripting vocabulary is the other fakes': ``reply``, ``reply_tool``, ``reply_json``, ``fail``,
``fail_midstream``, ``reset_midstream``, ``malformed``, ``reset_connection``, ``delay``.

A streaming request gets the same replies as server-sent events, one ``GenerateContentResponse``
chunk each (``chunks`` says how the text is cut, ``pace_s`` how long to wait before each), the
last one carrying the ``finishReason`` and ``usageMetadata`` (Gemini's terminator).
``reply(thoughts=...)`` adds thought-summary parts (``"thought": true``; streamed before the
text) and ``thoughts_tokens`` reports ``thoughtsTokenCount`` apart from ``candidatesTokenCount``,
as Gemini does; ``cached_tokens`` reports ``cachedContentTokenCount`` (inside
``promptTokenCount``). ``reply(block_reason=...)`` answers a prompt blocked before any candidate;
``reply(finish_reason=...)`` ends with any of Gemini's endings (:data:`ENDINGS`: ``MODEL_ARMOR``,
``UNEXPECTED_TOOL_CALL``, ...) or any other string.

``:countTokens`` is served outside the script: ``count_tokens`` when set (else one token per four
characters of the body), or the status ``count_tokens_status``. So are Batch Mode and the Files
routes it uses (:mod:`scriptorium._testing.gemini_batches`); ``server.batches`` scripts how
batches run and how their rows end, and records every batch created.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping
from typing import Any

from scriptorium._testing.batches import FakeBatches
from scriptorium._testing.gemini_batches import GeminiBatchRoutes
from scriptorium._testing.http import (
    RESET,
    Answer,
    Chunks,
    RecordedRequest,
    ScriptedHTTPServer,
    sse,
    text_pieces,
)

__all__ = ["ENDINGS", "FakeGeminiServer", "RecordedRequest", "answer_body", "error_body"]

#: Every ``finishReason`` the Gemini API documents besides ``STOP``, for ``reply(finish_reason=)``
#: (any other string is sent as given too): the endings recordings show a model can give.
ENDINGS = (
    "MAX_TOKENS",
    "SAFETY",
    "RECITATION",
    "LANGUAGE",
    "OTHER",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "MALFORMED_FUNCTION_CALL",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
    "IMAGE_OTHER",
    "NO_IMAGE",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
    "MISSING_THOUGHT_SIGNATURE",
    "MALFORMED_RESPONSE",
    "MODEL_ARMOR",
    "FINISH_REASON_UNSPECIFIED",
)

# /v1beta/models/M:method or /v1beta1/projects/P/locations/L/publishers/google/models/M:method
_ROUTE = re.compile(
    r"^/[^/]+/(?:projects/[^/]+/locations/[^/]+/publishers/[^/]+/)?models/(?P<model>[^/:]+)"
    r":(?P<method>generateContent|streamGenerateContent|countTokens)$"
)

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _route(path: str) -> re.Match[str] | None:
    return _ROUTE.match(path.split("?")[0].rstrip("/"))


class _Routes(tuple[str, ...]):
    """The scripted paths: every model's generate and stream routes, Vertex AI's included."""

    def __contains__(self, path: object) -> bool:
        found = isinstance(path, str) and _route(path)
        return bool(found) and found.group("method") != "countTokens"  # type: ignore[union-attr]


def error_body(
    status: int, message: str = "scripted failure", *, name: str | None = None, details: Any = None
) -> dict[str, Any]:
    """A Google error body: ``{"error": {"code", "message", "status"[, "details"]}}``."""
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": name or _STATUS_NAMES.get(status, "UNKNOWN"),
    }
    if details is not None:
        error["details"] = details
    return {"error": error}


def _usage(
    prompt: int, candidates: int, thoughts: int | None, cached: int | None
) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + (thoughts or 0),
    }
    if thoughts is not None:
        usage["thoughtsTokenCount"] = thoughts
    if cached is not None:
        usage["cachedContentTokenCount"] = cached
    return usage


def answer_body(
    text: str,
    *,
    model: str,
    finish_reason: str | None = "STOP",
    usage: Mapping[str, Any] | None = None,
    thoughts: str | None = None,
    ident: str = "resp-fake",
) -> dict[str, Any]:
    """A ``GenerateContentResponse`` with one candidate."""
    parts: list[dict[str, Any]] = []
    if thoughts is not None:
        parts.append({"text": thoughts, "thought": True})
    parts.append({"text": text})
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": model, "responseId": ident}
    if usage is not None:
        body["usageMetadata"] = dict(usage)
    return body


def _streams(request: RecordedRequest) -> bool:
    found = _route(request.path)
    return found is not None and found.group("method") == "streamGenerateContent"


def _model(request: RecordedRequest) -> str:
    found = _route(request.path)
    return found.group("model") if found is not None else "gemini-fake"


def _chunk(model: str, ident: str, parts: list[dict[str, Any]], **extra: Any) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    finish = extra.pop("finishReason", None)
    if finish is not None:
        candidate["finishReason"] = finish
    body = {"candidates": [candidate], "modelVersion": model, "responseId": ident, **extra}
    return sse(None, body).replace(b"\n\n", b"\r\n\r\n")


def _sse_answer(
    body: dict[str, Any],
    pieces: list[str],
    pace_s: float,
    tail: list[tuple[float, bytes]] | None = None,
) -> tuple[tuple[float, bytes], ...]:
    """``body`` as the chunks a streaming request gets; ``tail`` replaces the final chunk."""
    model, ident = body["modelVersion"], body["responseId"]
    candidate = body["candidates"][0]
    parts: list[tuple[float, bytes]] = []
    for part in candidate["content"]["parts"]:
        if part.get("thought"):
            for piece in text_pieces(part["text"], None):
                parts.append((pace_s, _chunk(model, ident, [{"text": piece, "thought": True}])))
    for piece in pieces:
        parts.append((pace_s, _chunk(model, ident, [{"text": piece}])))
    if tail is not None:
        return (*parts, *tail)
    extra: dict[str, Any] = {"finishReason": candidate.get("finishReason")}
    if "usageMetadata" in body:
        extra["usageMetadata"] = body["usageMetadata"]
    parts.append((0.0, _chunk(model, ident, [{"text": ""}], **extra)))
    return tuple(parts)


def _text_of(body: dict[str, Any]) -> str:
    parts = body["candidates"][0]["content"]["parts"]
    return "".join(p["text"] for p in parts if not p.get("thought"))


class FakeGeminiServer(ScriptedHTTPServer):
    """A scripted Gemini API on ``127.0.0.1``; ``url`` is the base URL for the SDK (it adds the
    API version). ``latency_s`` delays every answer; ``record=False`` keeps no ``requests``."""

    paths = _Routes()

    def __init__(
        self, *, latency_s: float = 0.0, default_text: str | None = "ok", record: bool = True
    ) -> None:
        super().__init__(latency_s=latency_s, record=record)
        self.default_text = default_text
        self._ids = itertools.count(1)
        #: What ``countTokens`` answers (None: an estimate from the body).
        self.count_tokens: int | None = None
        #: A status ``countTokens`` fails with instead (None: it answers).
        self.count_tokens_status: int | None = None
        #: The batches the server holds, and their script.
        self.batches = FakeBatches("batches/batch-", self._batch_answer)
        self._batch_routes = GeminiBatchRoutes(self.batches, lambda: self.base_url)

    @property
    def url(self) -> str:
        """The base URL to give the SDK (``http://127.0.0.1:<port>``)."""
        return self.base_url

    def _ident(self) -> str:
        return f"resp-fake-{next(self._ids)}"

    def _answer_for(
        self,
        request: RecordedRequest,
        body: dict[str, Any],
        chunks: Chunks | None,
        pace_s: float,
        headers: Mapping[str, str] | None,
    ) -> Answer:
        if _streams(request):
            parts = _sse_answer(body, text_pieces(_text_of(body), chunks), pace_s)
            return Answer(
                parts=parts, headers=dict(headers or {}), content_type="text/event-stream"
            )
        return Answer.json(body, headers=headers)

    # --- scripting -------------------------------------------------------------------------------

    def reply(
        self,
        text: str = "ok",
        *,
        finish_reason: str | None = "STOP",
        prompt_tokens: int = 10,
        candidates_tokens: int = 5,
        thoughts_tokens: int | None = None,
        cached_tokens: int | None = None,
        usage: bool = True,
        thoughts: str | None = None,
        block_reason: str | None = None,
        model: str | None = None,
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
        chunks: Chunks | None = None,
        pace_s: float = 0.0,
    ) -> None:
        """Queue a 200 whose one candidate says ``text`` (``usage=False`` omits
        ``usageMetadata``); streamed in ``chunks``, ``pace_s`` apart, when the request streams.
        ``block_reason`` answers instead a prompt blocked before any candidate."""
        counts = (
            _usage(prompt_tokens, candidates_tokens, thoughts_tokens, cached_tokens)
            if usage
            else None
        )

        def build(req: RecordedRequest) -> Answer:
            ident = self._ident()
            name = model or _model(req)
            if block_reason is not None:
                blocked: dict[str, Any] = {
                    "promptFeedback": {"blockReason": block_reason},
                    "modelVersion": name,
                    "responseId": ident,
                }
                if counts is not None:
                    blocked["usageMetadata"] = counts
                if _streams(req):
                    data = sse(None, blocked).replace(b"\n\n", b"\r\n\r\n")
                    return Answer(parts=((0.0, data),), content_type="text/event-stream")
                return Answer.json(blocked, headers=headers)
            body = answer_body(
                text,
                model=name,
                finish_reason=finish_reason,
                usage=counts,
                thoughts=thoughts,
                ident=ident,
            )
            return self._answer_for(req, body, chunks, pace_s, headers)

        self.push(build, delay_s)

    def reply_tool(
        self,
        args: Any,
        *,
        name: str | None = None,
        prompt_tokens: int = 10,
        candidates_tokens: int = 5,
        delay_s: float = 0.0,
    ) -> None:
        """Queue a 200 whose one part is a call of the request's one declared function (or
        ``name``) with ``args``; a streaming request gets it in one chunk, then the finish."""

        def build(req: RecordedRequest) -> Answer:
            chosen = name
            if chosen is None and isinstance(req.body, dict):
                tools = req.body.get("tools") or [{}]
                declared = tools[0].get("functionDeclarations") or [{}]
                chosen = declared[0].get("name")
            call = {"functionCall": {"name": chosen or "output", "args": args}}
            model, ident = _model(req), self._ident()
            usage = _usage(prompt_tokens, candidates_tokens, None, None)
            candidate = {
                "content": {"role": "model", "parts": [call]},
                "finishReason": "STOP",
                "index": 0,
            }
            body: dict[str, Any] = {
                "candidates": [candidate],
                "modelVersion": model,
                "responseId": ident,
                "usageMetadata": usage,
            }
            if _streams(req):
                parts = (
                    (0.0, _chunk(model, ident, [call])),
                    (0.0, _chunk(model, ident, [], finishReason="STOP", usageMetadata=usage)),
                )
                return Answer(parts=parts, content_type="text/event-stream")
            return Answer.json(body)

        self.push(build, delay_s)

    def fail(
        self,
        status: int,
        *,
        message: str = "scripted failure",
        name: str | None = None,
        details: Any = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """Queue an error status. Without ``body``, a Google error body with ``name`` (default:
        the status's name, ``RESOURCE_EXHAUSTED`` for 429) and ``details``."""
        if body is None:
            body = error_body(status, message, name=name, details=details)
        self.reply_json(body, status=status, headers=headers, delay_s=delay_s)

    def fail_midstream(
        self,
        text: str = "",
        *,
        status: int = 500,
        message: str = "scripted failure mid-stream",
        chunks: Chunks | None = None,
        pace_s: float = 0.0,
    ) -> None:
        """Queue a stream that sends ``text`` and then an error object (a request that does not
        stream gets the error status instead)."""
        error = error_body(status, message)

        def build(req: RecordedRequest) -> Answer:
            if not _streams(req):
                return Answer.json(error, status=status)
            body = answer_body(text, model=_model(req), ident=self._ident())
            data = sse(None, error).replace(b"\n\n", b"\r\n\r\n")
            parts = _sse_answer(body, text_pieces(text, chunks), pace_s, [(0.0, data)])
            return Answer(parts=parts, content_type="text/event-stream")

        self.push(build)

    def reset_midstream(
        self, text: str = "", *, chunks: Chunks | None = None, pace_s: float = 0.0
    ) -> None:
        """Queue a stream that sends ``text`` and then drops the connection (TCP reset)."""

        def build(req: RecordedRequest) -> Answer:
            if not _streams(req):
                return Answer(reset=True)
            body = answer_body(text, model=_model(req), ident=self._ident())
            parts = _sse_answer(body, text_pieces(text, chunks), pace_s, [(0.0, RESET)])
            return Answer(parts=parts, content_type="text/event-stream")

        self.push(build)

    def delay(self, seconds: float, text: str = "ok") -> None:
        """Queue a reply sent only after ``seconds`` (a client with a shorter timeout gives up)."""
        self.reply(text, delay_s=seconds)

    # --- defaults and routes ---------------------------------------------------------------------

    def default_answer(self, request: RecordedRequest) -> Answer:
        """``default_text`` as an answer, or a 500 when it is None."""
        if self.default_text is None:
            return Answer.json(error_body(500, "script exhausted"), status=500)
        body = answer_body(
            self.default_text,
            model=_model(request),
            usage=_usage(10, 5, None, None),
            ident=self._ident(),
        )
        return self._answer_for(request, body, None, 0.0, None)

    def not_found(self, request: RecordedRequest) -> Answer:
        """A Google-shaped 404 naming the path."""
        return Answer.json(error_body(404, f"no route {request.path}"), status=404)

    def clear(self) -> None:
        """Forget the script, the recorded requests, every batch and file."""
        super().clear()
        self.batches.clear()
        self._batch_routes.clear()

    def _batch_answer(self, custom_id: str, body: Any) -> tuple[int, Any]:
        """A batch row answered as the same body sent to ``:generateContent`` would be: by
        ``batches.text`` when set, else by the next scripted step or the default answer."""
        model = self._batch_routes.models.get(custom_id, "gemini-fake")
        path = f"/v1beta/models/{model}:generateContent"
        text_for = self.batches.text
        if text_for is None:
            answer = self.answer_unsent(RecordedRequest("POST", path, {}, body, b""))
            try:
                return answer.status, json.loads(answer.body)
            except ValueError:
                return answer.status, answer.body.decode("utf-8", "replace")
        usage = _usage(10, 5, None, None)
        return 200, answer_body(text_for(custom_id, body), model=model, usage=usage)

    def route(self, request: RecordedRequest) -> Answer | None:
        """``:countTokens``, and the Batch Mode and Files routes, outside the script."""
        found = _route(request.path)
        if found is None or found.group("method") != "countTokens":
            return self._batch_routes.answer(request)
        if request.method != "POST":
            return None
        if self.count_tokens_status is not None:
            status = self.count_tokens_status
            return Answer.json(error_body(status, "counting refused"), status=status)
        total = self.count_tokens
        if total is None:
            total = max(1, len(json.dumps(request.body or {})) // 4)
        return Answer.json({"totalTokens": total})
