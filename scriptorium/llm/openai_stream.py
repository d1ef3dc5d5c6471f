"""Streaming for the ``openai`` adapter: Chat Completions with ``stream=True`` and
``stream_options.include_usage``, behind the same retry loop.

One attempt is "send, and read chunks until the first text": a 429, a 5xx, a reset or an error
chunk before any text goes through the ordinary retry rules. From the first text on nothing is
retried; a failure is an ``LLMGenerateError`` carrying ``partial_text``.

The chunks are folded back into the ``chat.completion`` body a non-streamed request would have
returned, and that body goes through :func:`~scriptorium.llm.openai.parse_completion`, so text,
finish reason, usage and metadata are read by one piece of code for both paths. The deltas are
the message content (the tool call's arguments with the ``tool`` strategy; a refusal's text when
the model refuses).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from scriptorium.errors import LLMGenerateError, redact
from scriptorium.llm.media_wire import MediaWire
from scriptorium.llm.model import LLMRequest
from scriptorium.llm.retry import Failure, acall_with_retry, call_with_retry, classify_http
from scriptorium.llm.streaming import StreamItem, aread_to_first, arest, read_to_first, rest

if TYPE_CHECKING:
    from scriptorium.llm.openai import OpenAIClient

__all__ = ["astream", "stream"]

_PROVIDER = "openai"

# The status an error chunk's type or code stands for (it arrives inside a 200).
_STATUS_OF_ERROR = {
    "rate_limit_exceeded": 429,
    "requests": 429,
    "tokens": 429,
    "insufficient_quota": 429,
    "invalid_request_error": 400,
    "server_error": 500,
    "overloaded": 503,
    "service_unavailable": 503,
}


def _classify(err: BaseException) -> Failure:
    """:func:`openai.classify`, plus an error chunk (an ``APIError`` without a status)."""
    from scriptorium.llm import openai

    sdk = openai._sdk()
    if isinstance(err, sdk.APIError) and not isinstance(
        err, sdk.APIStatusError | sdk.APIConnectionError
    ):
        body = err.body if isinstance(err.body, Mapping) else {}
        kinds = [body.get("code"), body.get("type")]
        status = next((_STATUS_OF_ERROR[k] for k in kinds if k in _STATUS_OF_ERROR), 500)
        return classify_http(status, {}, {"error": dict(body)})
    return openai.classify(err)


class _Fold:
    """Folds streamed chunks into the ``chat.completion`` body they add up to."""

    __slots__ = ("args", "content", "finish", "ident", "model", "name", "refusal", "usage")

    def __init__(self) -> None:
        self.content: list[str] = []
        self.refusal: list[str] = []
        self.args: list[str] = []
        self.name: str | None = None
        self.finish: str | None = None
        self.usage: Any = None
        self.model: str | None = None
        self.ident: str | None = None

    def add(self, chunk: Any) -> str | None:
        """Take one chunk; the text it adds to the output, if any."""
        if self.model is None:
            self.model = getattr(chunk, "model", None)
            self.ident = getattr(chunk, "id", None)
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage.model_dump() if hasattr(usage, "model_dump") else usage
        choices = getattr(chunk, "choices", None)
        if not choices:
            return None
        choice = choices[0]
        if choice.finish_reason is not None:
            self.finish = choice.finish_reason
        delta = choice.delta
        if delta is None:
            return None
        piece: str | None = None
        if delta.content:
            self.content.append(delta.content)
            piece = delta.content
        refusal = getattr(delta, "refusal", None)
        if refusal:
            self.refusal.append(refusal)
            piece = refusal
        calls = getattr(delta, "tool_calls", None)
        if calls:
            function = calls[0].function
            if function is not None:
                if function.name:
                    self.name = function.name
                if function.arguments:
                    self.args.append(function.arguments)
                    piece = function.arguments
        return piece

    def body(self) -> bytes:
        """The completion these chunks spelled out, as the bytes of a non-streamed 200."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self.content) if self.content else None,
            "refusal": "".join(self.refusal) if self.refusal else None,
        }
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
    """Stands for the raw HTTP response ``openai._read`` takes: the folded body and the headers."""

    __slots__ = ("content", "headers")

    def __init__(self, content: bytes, headers: Any) -> None:
        self.content = content
        self.headers = headers


def _broken(model: str, key: str, err: BaseException, attempts: int, text: str) -> LLMGenerateError:
    """The final error of a stream that failed after its first text (never retried)."""
    if isinstance(err, LLMGenerateError):
        failure = Failure(
            err.reason or "invalid_response",
            bool(err.retryable),
            err.http_status,
            err.retry_after_s,
            err.message,
        )
    else:
        try:
            failure = _classify(err)
        except Exception:
            failure = Failure("invalid_response", False, message=type(err).__name__)
    message = redact(
        f"openai {model}: {failure.reason} ({failure.message}) after the stream began", (key,)
    )
    return LLMGenerateError(
        message,
        reason=failure.reason,
        retryable=failure.retryable,
        http_status=failure.http_status,
        retry_after_s=failure.retry_after_s,
        attempts=attempts,
        provider=_PROVIDER,
        model=model,
        partial_text=text,
    )


def _setup(request: LLMRequest) -> tuple[str, dict[str, Any], str | None, MediaWire]:
    """The key, the streaming parameters, the strategy and the media wire (media base64 spliced
    into the body as it is sent, as for ``generate``)."""
    from scriptorium.llm.openai import _key_value, build_params

    key = _key_value(request)
    media_wire = MediaWire()
    params, strategy = build_params(request, media_wire=media_wire)
    params["stream"] = True
    params["stream_options"] = {"include_usage": True}
    return key, params, strategy, media_wire


def stream(owner: OpenAIClient, request: LLMRequest) -> Iterator[StreamItem]:
    """The response to ``request`` as it is written: text chunks, then the ``LLMResponse``."""
    from scriptorium.llm.openai import _read

    key, params, strategy, media_wire = _setup(request)
    client = owner._clients.sync(owner._endpoint(request), key)
    started = time.perf_counter()
    model = request.target.model

    def attempt(timeout_s: float) -> tuple[Any, Iterator[Any], _Fold, str | None]:
        with media_wire.sending(client, params) as sent:
            chunks = client.chat.completions.create(**sent, timeout=timeout_s)
        fold = _Fold()
        iterator, first = read_to_first(chunks, fold)
        return chunks, iterator, fold, first

    (chunks, iterator, fold, first), attempts, _ = call_with_retry(
        attempt,
        _classify,
        policy=owner._policy(request.settings),
        hooks=owner._hooks,
        provider=_PROVIDER,
        model=model,
        secrets=(key,),
    )

    def broken(err: Exception, partial: str) -> Exception:
        return _broken(model, key, err, attempts, partial)

    try:
        yield from rest(iterator, fold, first, broken)
    finally:
        chunks.close()
    parsed = _read(_Raw(fold.body(), chunks.response.headers), strategy)
    yield owner._response(request, parsed, strategy, attempts, started)


async def astream(owner: OpenAIClient, request: LLMRequest) -> AsyncIterator[StreamItem]:
    """The async twin of :func:`stream`."""
    from scriptorium.llm.openai import _read

    key, params, strategy, media_wire = _setup(request)
    client = await owner._clients.async_(owner._endpoint(request), key)
    started = time.perf_counter()
    model = request.target.model

    async def attempt(timeout_s: float) -> tuple[Any, AsyncIterator[Any], _Fold, str | None]:
        with media_wire.sending(client, params) as sent:
            chunks = await client.chat.completions.create(**sent, timeout=timeout_s)
        fold = _Fold()
        iterator, first = await aread_to_first(chunks, fold)
        return chunks, iterator, fold, first

    (chunks, iterator, fold, first), attempts, _ = await acall_with_retry(
        attempt,
        _classify,
        policy=owner._policy(request.settings),
        hooks=owner._hooks,
        provider=_PROVIDER,
        model=model,
        secrets=(key,),
    )

    def broken(err: Exception, partial: str) -> Exception:
        return _broken(model, key, err, attempts, partial)

    try:
        async for piece in arest(iterator, fold, first, broken):
            yield piece
    finally:
        await chunks.close()
    parsed = _read(_Raw(fold.body(), chunks.response.headers), strategy)
    yield owner._response(request, parsed, strategy, attempts, started)
