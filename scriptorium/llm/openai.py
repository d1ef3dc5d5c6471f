"""The ``openai`` provider: OpenAI and OpenAI-compatible servers through the official SDK.

One adapter serves api.openai.com and the servers that speak its Chat Completions API (vLLM,
Ollama, llama.cpp server, ...) through ``target.endpoint``, the base URL *including* ``/v1``.

- The SDK is imported on first use (missing -> ``reason="provider_unavailable"``) and always built
  with ``max_retries=0``: :mod:`scriptorium.llm.retry` is the only retry loop. Each request gets the
  time left of the budget as its timeout.
- One SDK client per (endpoint, key digest), reused; async clients are kept per event loop, since
  an async client belongs to the loop it first ran on.
- The key and base URL are passed explicitly, and what the SDK would otherwise pick up from the
  environment (``OPENAI_ORG_ID``, ``OPENAI_PROJECT_ID``, ``OPENAI_CUSTOM_HEADERS``, ...) is cleared:
  a profile alone says where a request goes and as whom.
- The body is built here (:func:`build_params`), encoded by us and sent with the SDK's
  lower-level ``post``: the SDK's auth, headers, base URL, timeout and error types, without its
  typed layer, which walks and transforms every parameter against its type annotations on each
  call (about 0.5 ms per call on the development machine). What ``prepare`` shows is then exactly
  the body sent.
- The response body is parsed here, not by the SDK, so a non-JSON or wrong-shaped 200 is a clean
  ``invalid_response`` instead of a half-filled model object.

Request mapping, structured-output strategies and usage semantics: ``internal_docs/llm.md``.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from scriptorium.errors import LLMGenerateError, describe
from scriptorium.llm import pricing, wire
from scriptorium.llm._clients import ClientCache
from scriptorium.llm._direct import encode_body, http_module
from scriptorium.llm.media_blocks import b64_text, openai_messages
from scriptorium.llm.media_wire import MediaWire
from scriptorium.llm.model import LLMRequest, LLMResponse, StructuredOutput, Target, Usage
from scriptorium.llm.openai_schema import strict_schema
from scriptorium.llm.retry import (
    Failure,
    RetryHooks,
    RetryPolicy,
    acall_with_retry,
    call_with_retry,
    classify_http,
)
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message

if TYPE_CHECKING:
    from scriptorium.llm.streaming import StreamItem

__all__ = ["DEFAULT_BASE_URL", "OpenAIClient", "build_params", "parse_completion"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Where the body is posted, under the base URL (which carries the ``/v1``).
CHAT_PATH = "/chat/completions"
_PROVIDER = "openai"
_FINISH = {
    "stop": "stop",
    "length": "length",
    "content_filter": "refusal",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
}
# OpenAI echoes a masked key in 401 messages ("sk-ab***yz"); even fragments stay out of errors.
_MASKED_KEY = re.compile(r"\S*\*{3,}\S*")


def _sdk() -> Any:
    """The ``openai`` module, imported on first use."""
    try:
        import openai
    except ImportError as err:
        raise LLMGenerateError(
            "the openai provider needs the 'openai' package (pip install 'scriptorium[openai]')",
            reason="provider_unavailable",
            provider=_PROVIDER,
        ) from err
    return openai


@functools.cache
def _response_class() -> Any:
    """The SDK's HTTP ``Response`` class: as ``cast_to`` it makes ``post`` hand back the HTTP
    response itself, unparsed (looked up once: it is asked for on every attempt)."""
    return http_module(_sdk()).Response


# --- request ----------------------------------------------------------------------------------


def _tool_name(structured: StructuredOutput) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", structured.name)[:64]
    return name or "output"


def _max_tokens_field(request: LLMRequest) -> str:
    """``max_completion_tokens`` for api.openai.com (its reasoning models reject ``max_tokens``),
    ``max_tokens`` for other endpoints (what every compatible server understands); a profile may
    choose with ``options.max_tokens_field``."""
    chosen = request.options.get("max_tokens_field")
    if chosen in ("max_tokens", "max_completion_tokens"):
        return str(chosen)
    if chosen is not None:  # a typo must not silently send the other name
        raise LLMGenerateError(
            "openai: options.max_tokens_field must be 'max_tokens' or 'max_completion_tokens'",
            reason="config",
            provider=_PROVIDER,
            model=request.target.model,
        )
    endpoint = request.target.endpoint
    if endpoint is None or "://api.openai.com" in endpoint:
        return "max_completion_tokens"
    return "max_tokens"


def _takes_cache_key(request: LLMRequest) -> bool:
    """OpenAI's own endpoint takes ``prompt_cache_key``; a compatible server may refuse unknown
    parameters, so it gets one only when its profile says ``options: {prompt_cache_key: true}``."""
    endpoint = request.target.endpoint
    if endpoint is None or "://api.openai.com" in endpoint:
        return True
    return request.options.get("prompt_cache_key") is True


def build_params(
    request: LLMRequest, *, media_wire: MediaWire | None = None
) -> tuple[dict[str, Any], str | None]:
    """The Chat Completions parameters for ``request`` and the structured strategy used.

    ``top_k`` is not sent: OpenAI has no such parameter and rejects unknown ones. Strategies:
    ``native`` (and ``auto``) -> ``response_format`` (``json_schema``, strict when the schema
    reduces; ``json_object`` for the ``json`` format); ``tool`` -> one forced function whose
    arguments are the output; ``prompt`` -> the schema in the system prompt.
    """
    settings: ExecutionSettings = request.settings
    params: dict[str, Any] = {"model": request.target.model}
    params[_max_tokens_field(request)] = settings.max_tokens
    if settings.temperature is not None:
        params["temperature"] = settings.temperature
    if settings.top_p is not None:
        params["top_p"] = settings.top_p
    if settings.stop_sequences:
        params["stop"] = list(settings.stop_sequences)

    structured = request.structured_output
    # The strategy and the system text come from the module prepare shows them from.
    strategy = wire.openai_strategy(structured)
    system = wire.openai_system(request, strategy)
    if structured is not None:
        schema = structured.schema_
        has_schema = structured.format == "json_schema" and isinstance(schema, dict)
        if strategy == "tool":
            name = _tool_name(structured)
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": "Return the output.",
                        "parameters": strict_schema(schema),
                        "strict": True,
                    },
                }
            ]
            params["tool_choice"] = {"type": "function", "function": {"name": name}}
        elif strategy != "prompt" and has_schema:
            reduced = strict_schema(schema)
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": _tool_name(structured),
                    "schema": reduced if reduced is not None else schema,
                    "strict": reduced is not None,
                },
            }
        elif strategy != "prompt":
            params["response_format"] = {"type": "json_object"}

    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system})
    encode = b64_text if media_wire is None else media_wire.encode
    messages.extend(openai_messages(request, encode))
    params["messages"] = messages
    cache = request.cache
    if cache is not None and cache.key and _takes_cache_key(request):
        # OpenAI caches prefixes by itself; the key routes every run of one prompt to the same
        # cache.
        params["prompt_cache_key"] = cache.key
    return params, strategy


# --- response ---------------------------------------------------------------------------------


def _invalid(message: str) -> LLMGenerateError:
    return LLMGenerateError(message, reason="invalid_response", provider=_PROVIDER)


def _count(holder: Any, key: str) -> int:
    """A token count: missing or null is 0; anything but a non-negative integer is a broken
    response (counting it as 0 would under-report what was paid for)."""
    value = holder.get(key) if isinstance(holder, Mapping) else None
    if value is None:
        return 0
    if type(value) is not int or value < 0:
        raise _invalid(f"openai: usage.{key} is not a non-negative integer")
    return value


def parse_completion(raw: bytes, strategy: str | None) -> tuple[str, str, Usage, dict[str, Any]]:
    """Text, finish reason, usage (tokens only) and metadata from a 200 body; ``invalid_response``
    when the body is not a chat completion.

    ``input_tokens`` is ``prompt_tokens`` minus the cached tokens, which are reported as
    ``cache_read_input_tokens``: OpenAI counts cached tokens inside ``prompt_tokens``, and pricing
    charges each class once.
    """
    try:
        body = json.loads(raw)
    except ValueError as err:
        raise _invalid(f"openai: the 200 response is not JSON ({describe(err)})") from err
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _invalid("openai: the 200 response has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise _invalid("openai: the 200 response's choice has no message")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise _invalid("openai: the message content is not text")
    text = content or ""
    metadata: dict[str, Any] = {}
    if isinstance(body.get("id"), str):
        metadata["response_id"] = body["id"]
    raw_finish = choices[0].get("finish_reason")
    finish = _FINISH.get(raw_finish, raw_finish) if isinstance(raw_finish, str) else "stop"
    if raw_finish != finish:
        metadata["provider_finish_reason"] = raw_finish
    calls = message.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise _invalid("openai: the message's tool_calls is not a list")
    if strategy == "tool" and isinstance(calls, list) and calls:
        function = calls[0].get("function") if isinstance(calls[0], dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if not isinstance(arguments, str):
            raise _invalid("openai: the tool call has no arguments")
        text = arguments
    refusal = message.get("refusal")
    if refusal is not None and not isinstance(refusal, str):
        raise _invalid("openai: the message's refusal is not text")
    if refusal:
        finish = "refusal"
        metadata["refusal"] = refusal
        text = text or refusal
    usage_body = body.get("usage")
    if not isinstance(usage_body, dict):
        metadata["usage_missing"] = True
        usage_body = {}
    prompt = _count(usage_body, "prompt_tokens")
    details = usage_body.get("prompt_tokens_details")
    cached = min(prompt, _count(details, "cached_tokens") if isinstance(details, dict) else 0)
    usage = Usage(
        input_tokens=prompt - cached,
        output_tokens=_count(usage_body, "completion_tokens"),
        cache_read_input_tokens=cached,
    )
    if isinstance(body.get("model"), str):
        metadata["response_model"] = body["model"]
    if isinstance(body.get("service_tier"), str):
        metadata["service_tier"] = body["service_tier"]
    return text, finish, usage, metadata


# --- errors -----------------------------------------------------------------------------------


def classify(err: BaseException) -> Failure:
    """The one translation of SDK exceptions into retry :class:`Failure` s."""
    sdk = _sdk()
    if isinstance(err, sdk.APIStatusError):
        failure = classify_http(err.status_code, err.response.headers, err.body)
        message = _MASKED_KEY.sub("[redacted]", failure.message)
        return Failure(
            failure.reason,
            failure.retryable,
            failure.http_status,
            failure.retry_after_s,
            message,
        )
    if isinstance(err, sdk.APITimeoutError):
        return Failure("timeout", True, message="request timed out")
    if isinstance(err, sdk.APIConnectionError):
        cause = err.__cause__ or err.__context__
        return Failure("connection", True, message=describe(cause) if cause else "connection error")
    if isinstance(err, sdk.OpenAIError):
        return Failure("config", False, message=describe(err))
    return Failure("invalid_response", False, message=describe(err))


# --- the client -------------------------------------------------------------------------------

#: What one successful attempt yields: the parsed completion and the request id.
_Attempt = tuple[tuple[str, str, Usage, dict[str, Any]], str | None]


def _read(raw: Any, strategy: str | None) -> _Attempt:
    # Parsed inside the attempt, so an invalid 200 fails through the retry loop like any failure
    # and carries its attempt count.
    return parse_completion(raw.content, strategy), raw.headers.get("x-request-id")


def _key_value(request: LLMRequest) -> str:
    value: Any = request.api_key  # a str only if a caller bypassed validation (model_copy)
    key = value.get_secret_value() if isinstance(value, SecretStr) else str(value or "")
    if not key:
        raise LLMGenerateError(
            "openai: no API key (local servers that ignore keys still need one named)",
            reason="config",
            provider=_PROVIDER,
            model=request.target.model,
        )
    return key


def _scrub(client: Any) -> Any:
    # The SDK fills these from the environment when they are not passed; a profile names neither.
    client.organization = None
    client.project = None
    client.admin_api_key = None
    client.webhook_secret = None
    if hasattr(client, "_custom_headers"):
        client._custom_headers = {}
    return client


def _make_sdk_client(is_async: bool, key: str, base_url: str) -> Any:
    sdk = _sdk()
    cls = sdk.AsyncOpenAI if is_async else sdk.OpenAI
    return _scrub(cls(api_key=key, base_url=base_url, max_retries=0))


class OpenAIClient:
    """``Client`` and ``AsyncClient`` for the ``openai`` provider (see the module doc)."""

    def __init__(self, *, hooks: RetryHooks | None = None) -> None:
        self._hooks = hooks or RetryHooks()
        self._clients = ClientCache(_make_sdk_client)

    @staticmethod
    def _endpoint(request: LLMRequest) -> str:
        return request.target.endpoint or DEFAULT_BASE_URL

    @staticmethod
    def _policy(settings: ExecutionSettings) -> RetryPolicy:
        return RetryPolicy(max_retries=settings.max_retries, timeout_s=settings.timeout_s)

    @staticmethod
    def _response(
        request: LLMRequest,
        result: _Attempt,
        strategy: str | None,
        attempts: int,
        started: float,
    ) -> LLMResponse:
        (text, finish, usage, metadata), request_id = result
        cost, note = pricing.cost_micro(request.target.model, usage, request.pricing)
        usage = usage.model_copy(update={"cost_micro": cost, "llm_calls": attempts})
        metadata.update({"provider": _PROVIDER, "strategy": strategy})
        if request_id:
            metadata["request_id"] = request_id
        if note:
            metadata["pricing"] = note
        ignored = wire.ignored_settings(_PROVIDER, request.settings)
        if ignored:
            metadata["ignored_settings"] = list(ignored)
        return LLMResponse(
            text=text,
            model=metadata.get("response_model") or request.target.model,
            finish_reason=finish,
            usage=usage,
            attempts=attempts,
            # Wall time, not the retry clock: that one is injectable and may be a fake.
            latency_ms=(time.perf_counter() - started) * 1000.0,
            metadata=metadata,
        )

    def generate(self, request: LLMRequest) -> LLMResponse:
        """One chat completion, through the retry loop."""
        key = _key_value(request)
        client = self._clients.sync(self._endpoint(request), key)
        started = time.perf_counter()  # after the first-use SDK import: not the request's time
        media_wire = MediaWire()  # media base64 is spliced in as the body is sent
        params, strategy = build_params(request, media_wire=media_wire)

        def attempt(timeout_s: float) -> _Attempt:
            with media_wire.sending(client, params) as sent:
                response = client.post(
                    CHAT_PATH,
                    content=encode_body(sent),
                    cast_to=_response_class(),
                    options={"timeout": timeout_s},
                )
            return _read(response, strategy)

        result, attempts, _ = call_with_retry(
            attempt,
            classify,
            policy=self._policy(request.settings),
            hooks=self._hooks,
            provider=_PROVIDER,
            model=request.target.model,
            secrets=(key,),
        )
        return self._response(request, result, strategy, attempts, started)

    async def agenerate(self, request: LLMRequest) -> LLMResponse:
        """The async twin of :meth:`generate`."""
        key = _key_value(request)
        client = await self._clients.async_(self._endpoint(request), key)
        started = time.perf_counter()  # after the first-use SDK import: not the request's time
        media_wire = MediaWire()
        params, strategy = build_params(request, media_wire=media_wire)

        async def attempt(timeout_s: float) -> _Attempt:
            with media_wire.sending(client, params) as sent:
                response = await client.post(
                    CHAT_PATH,
                    content=encode_body(sent),
                    cast_to=_response_class(),
                    options={"timeout": timeout_s},
                )
            return _read(response, strategy)

        result, attempts, _ = await acall_with_retry(
            attempt,
            classify,
            policy=self._policy(request.settings),
            hooks=self._hooks,
            provider=_PROVIDER,
            model=request.target.model,
            secrets=(key,),
        )
        return self._response(request, result, strategy, attempts, started)

    def stream(self, request: LLMRequest) -> Iterator[StreamItem]:
        """One chat completion streamed: text chunks as they arrive, then the ``LLMResponse``;
        retried only before the first chunk (see :mod:`scriptorium.llm.openai_stream`)."""
        from scriptorium.llm.openai_stream import stream

        return stream(self, request)

    def astream(self, request: LLMRequest) -> AsyncIterator[StreamItem]:
        """The async twin of :meth:`stream`."""
        from scriptorium.llm.openai_stream import astream

        return astream(self, request)

    def verify(self, target: Target, api_key: SecretStr | str | None) -> LLMResponse:
        """A minimal real request (a few output tokens, one retry) proving key, endpoint and model."""
        request = LLMRequest(
            target=target,
            api_key=api_key,
            messages=(Message(role="user", content="Reply with OK."),),
            settings=ExecutionSettings(max_tokens=16, timeout_s=30.0, max_retries=1),
        )
        return self.generate(request)

    def close(self) -> None:
        """Close the sync SDK clients (their connection pools)."""
        self._clients.close()

    async def aclose(self) -> None:
        """Close the async SDK clients of the running event loop (``asyncio.run`` also closes
        them when its loop shuts down)."""
        await self._clients.aclose()
