"""The Anthropic adapter: the official ``anthropic`` SDK behind scriptorium's retry loop.

The SDK is imported on first use (``import anthropic`` costs seconds and tens of MiB), built with
its own retries off and the key and base URL passed explicitly, and kept: one SDK client per
endpoint and key (hashed, never held as a plain dict key), and for async one per event loop too,
because an async client's connection pool belongs to the loop it was created on.

The body is built by :func:`scriptorium.llm.anthropic_body.build_body` and posted with the SDK's
lower-level ``post`` (auth, base URL, headers, timeouts and error types stay the SDK's; its typed
parameter and ``Message`` layer is skipped). Responses are read from the JSON ourselves: a non-JSON or
wrong-shaped 200 then becomes ``reason="invalid_response"`` instead of a half-built SDK object, and
the request id comes straight from the headers.
"""

from __future__ import annotations

import json
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from scriptorium.errors import LLMGenerateError, describe
from scriptorium.llm._clients import ClientCache
from scriptorium.llm._direct import direct_post, http_module
from scriptorium.llm.anthropic_body import (
    COUNT_TOKENS_PATH,
    MESSAGES_PATH,
    MessagesBody,
    build_body,
    count_tokens_body,
    encode_body,
)
from scriptorium.llm.anthropic_cache import one_hour_writes
from scriptorium.llm.media_wire import MediaWire
from scriptorium.llm.model import LLMRequest, LLMResponse, Target, Usage
from scriptorium.llm.pricing import cost_micro
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

__all__ = ["DEFAULT_BASE_URL", "AnthropicClient", "SDKFactory", "apost_messages", "post_messages"]

PROVIDER = "anthropic"
DEFAULT_BASE_URL = "https://api.anthropic.com"

#: ``sdk_factory(is_async, api_key, base_url)`` -> an ``anthropic.Anthropic``/``AsyncAnthropic``.
SDKFactory = Callable[[bool, str, str], Any]

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    # The model ran out of context window: as truncated as max_tokens, and treated the same.
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
    "tool_use": "tool_use",
}
_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)

_sdk_module: Any = None
_response_class: Any = None
_sdk_lock = threading.Lock()


def _sdk() -> Any:
    """The ``anthropic`` module, imported once, on first use."""
    global _sdk_module
    if _sdk_module is None:
        with _sdk_lock:
            if _sdk_module is None:
                try:
                    import anthropic
                except ImportError as err:
                    raise LLMGenerateError(
                        "the anthropic provider needs the 'anthropic' package: "
                        "pip install 'scriptorium[anthropic]'",
                        reason="provider_unavailable",
                        provider=PROVIDER,
                    ) from err
                _sdk_module = anthropic
    return _sdk_module


def _http_response_class() -> Any:
    """The ``Response`` class of the SDK's HTTP library: as ``cast_to`` it makes the SDK hand back
    the HTTP response itself, unparsed (``httpx2`` for SDK 2.x, ``httpx`` before)."""
    global _response_class
    if _response_class is None:
        _response_class = http_module(_sdk()).Response
    return _response_class


# SDK client -> the absolute Messages URL under its base URL. Given whole, the SDK sends to it as
# it is instead of parsing the path and merging it into the base URL again on every request.
_messages_urls: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def _messages_url(client: Any) -> str:
    try:
        url = _messages_urls.get(client)
    except TypeError:  # not weakly referenceable (a wrapper from an sdk_factory): not remembered
        return _url_under(client)
    if url is None:
        url = _messages_urls[client] = _url_under(client)
    return url


def _url_under(client: Any) -> str:
    # A client that does not show its base URL (a wrapper) gets the path, which it resolves.
    base = getattr(client, "base_url", None)
    return MESSAGES_PATH if base is None else str(base).rstrip("/") + MESSAGES_PATH


def post_messages(client: Any, body: dict[str, Any], timeout_s: float) -> tuple[bytes, Any]:
    """Send one prebuilt Messages API body as the SDK's lower-level ``post`` would: its auth, base
    URL, headers, timeout and error types, without its typed parameter and response layer. The
    body goes as bytes we encode (the SDK would walk and copy the dict, then encode it); the SDK's
    own client sends it through :mod:`scriptorium.llm._direct` (the request's headers worked out
    once), any other client through ``post``. Returns the response body's bytes and headers; an
    error status raises the SDK's ``APIStatusError``."""
    url = _messages_url(client)
    direct = direct_post(_sdk(), client, url)
    if direct is not None:
        response = direct.send(encode_body(body), timeout_s)
    else:
        response = client.post(
            url,
            content=encode_body(body),
            cast_to=_http_response_class(),
            options={"timeout": timeout_s},
        )
    return response.content, response.headers


async def apost_messages(client: Any, body: dict[str, Any], timeout_s: float) -> tuple[bytes, Any]:
    """The async twin of :func:`post_messages`."""
    url = _messages_url(client)
    direct = direct_post(_sdk(), client, url)
    if direct is not None:
        response = await direct.asend(encode_body(body), timeout_s)
    else:
        response = await client.post(
            url,
            content=encode_body(body),
            cast_to=_http_response_class(),
            options={"timeout": timeout_s},
        )
    return response.content, response.headers


def _default_factory(is_async: bool, api_key: str, base_url: str) -> Any:
    sdk = _sdk()
    cls = sdk.AsyncAnthropic if is_async else sdk.Anthropic
    # max_retries=0: ours is the only retry loop. Key and base URL explicit, so the SDK reads
    # neither from the environment nor from its profile files.
    client = cls(api_key=api_key, base_url=base_url, max_retries=0)
    # The SDK also merges ANTHROPIC_CUSTOM_HEADERS from the environment into every request (and
    # they would override the auth header); a profile alone decides what is sent.
    if hasattr(client, "_custom_headers"):
        client._custom_headers = {}
    client.webhook_key = None
    return client


def _classify(err: BaseException) -> Failure:
    """The one place SDK exceptions become :class:`Failure`s (by class, status and body type)."""
    sdk = _sdk()
    if isinstance(err, sdk.APIStatusError):
        return classify_http(err.status_code, err.response.headers, err.body)
    if isinstance(err, sdk.APITimeoutError):
        return Failure("timeout", True, message="request timed out")
    if isinstance(err, sdk.APIConnectionError):
        cause = err.__cause__
        detail = describe(cause) if cause is not None else "connection error"
        return Failure("connection", True, message=detail)
    if isinstance(err, sdk.APIResponseValidationError):
        return Failure("invalid_response", False, err.status_code, message="response failed checks")
    if isinstance(err, TypeError | ValueError):  # the SDK refused our parameters before sending
        return Failure("invalid_request", False, message=describe(err))
    return Failure("invalid_response", False, message=describe(err))


class AnthropicClient:
    """``Client`` and ``AsyncClient`` for the Anthropic Messages API.

    ``hooks`` inject clock, sleep, jitter and supervision into the retry loop; ``sdk_factory``
    builds SDK clients (default: the real SDK with ``max_retries=0``).
    """

    provider = PROVIDER

    def __init__(
        self, *, hooks: RetryHooks | None = None, sdk_factory: SDKFactory | None = None
    ) -> None:
        self._hooks = hooks or RetryHooks()
        self._clients = ClientCache(sdk_factory or _default_factory)

    # --- SDK clients ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close the sync SDK clients' connection pools (they are rebuilt if used again)."""
        self._clients.close()

    async def aclose(self) -> None:
        """Close the async SDK clients of the running event loop (``asyncio.run`` also closes
        them when its loop shuts down)."""
        await self._clients.aclose()

    def __enter__(self) -> AnthropicClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> AnthropicClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- the ports -----------------------------------------------------------------------------

    def generate(self, request: LLMRequest) -> LLMResponse:
        """Send ``request`` through the retry loop; raises ``LLMGenerateError``."""
        call = _Call(request)
        client = self._clients.sync(call.base_url, call.key)

        def attempt(timeout_s: float) -> tuple[dict[str, Any], str | None]:
            with call.wire.sending(client, call.sent.body) as body:
                content, headers = post_messages(client, body, timeout_s)
            return call.read(content), headers.get("request-id")

        started = time.perf_counter()
        (body, request_id), attempts, _ = call_with_retry(
            attempt, _classify, **call.retry_args(self._hooks)
        )
        return call.response(body, request_id, attempts, time.perf_counter() - started)

    async def agenerate(self, request: LLMRequest) -> LLMResponse:
        """The async twin of :meth:`generate`."""
        call = _Call(request)
        client = await self._clients.async_(call.base_url, call.key)

        async def attempt(timeout_s: float) -> tuple[dict[str, Any], str | None]:
            with call.wire.sending(client, call.sent.body) as body:
                content, headers = await apost_messages(client, body, timeout_s)
            return call.read(content), headers.get("request-id")

        started = time.perf_counter()
        (body, request_id), attempts, _ = await acall_with_retry(
            attempt, _classify, **call.retry_args(self._hooks)
        )
        return call.response(body, request_id, attempts, time.perf_counter() - started)

    def stream(self, request: LLMRequest) -> Iterator[StreamItem]:
        """``request`` streamed: text chunks as they arrive, then the ``LLMResponse``; retried
        only before the first chunk (see :mod:`scriptorium.llm.anthropic_stream`)."""
        from scriptorium.llm.anthropic_stream import stream

        return stream(self, request)

    def astream(self, request: LLMRequest) -> AsyncIterator[StreamItem]:
        """The async twin of :meth:`stream`."""
        from scriptorium.llm.anthropic_stream import astream

        return astream(self, request)

    def count_tokens(self, request: LLMRequest) -> int:
        """The input tokens of what :meth:`generate` would send for ``request``, from the API's
        token-counting endpoint (free, but rate limited); retried like a generation."""
        call = _Call(request)
        client = self._clients.sync(call.base_url, call.key)
        body = count_tokens_body(call.sent.body)

        def attempt(timeout_s: float) -> int:
            response = client.post(
                COUNT_TOKENS_PATH,
                content=encode_body(body),
                cast_to=_http_response_class(),
                options={"timeout": timeout_s},
            )
            return call.read_count(response.content)

        count, _, _ = call_with_retry(attempt, _classify, **call.retry_args(self._hooks))
        return count

    def verify(self, target: Target, api_key: SecretStr | str) -> LLMResponse:
        """A minimal real request (one ``ping`` message, ``max_tokens=1``, no retries) proving the
        key, endpoint and model; raises ``LLMGenerateError`` saying which failed."""
        request = LLMRequest(
            target=target,
            api_key=api_key,
            messages=(Message(role="user", content="ping"),),
            settings=ExecutionSettings(max_tokens=1, max_retries=0, timeout_s=30.0),
        )
        return self.generate(request)


def _usage_ok(usage: Any) -> bool:
    """Usage is an object whose token fields, where present, are non-negative integers."""
    if not isinstance(usage, dict):
        return False
    for field in _USAGE_FIELDS:
        value = usage.get(field)
        if value is not None and (type(value) is not int or value < 0):
            return False
    return True


class _Call:
    """One request's translation to and from the Messages API."""

    def __init__(self, request: LLMRequest) -> None:
        self.request = request
        self.model = request.target.model
        key = request.api_key.get_secret_value() if request.api_key is not None else ""
        if not key:
            raise LLMGenerateError(
                "the anthropic provider needs an API key",
                reason="config",
                provider=PROVIDER,
                model=self.model,
            )
        if not self.model:
            raise LLMGenerateError(
                "the anthropic provider needs a model", reason="config", provider=PROVIDER
            )
        self.key = key
        self.base_url = request.target.endpoint or DEFAULT_BASE_URL
        self.wire = MediaWire()  # media base64 is spliced in as the body is sent
        self.sent: MessagesBody = build_body(request, encode=self.wire.encode)

    def retry_args(self, hooks: RetryHooks) -> dict[str, Any]:
        settings = self.request.settings
        return {
            "policy": RetryPolicy(max_retries=settings.max_retries, timeout_s=settings.timeout_s),
            "hooks": hooks,
            "provider": PROVIDER,
            "model": self.model,
            "secrets": (self.key,),
        }

    def read(self, content: bytes) -> dict[str, Any]:
        """The parsed 200 body; anything unusable raises ``invalid_response`` (not retried)."""
        try:
            body = json.loads(content)
        except (ValueError, UnicodeDecodeError) as err:
            raise self._invalid("the 200 response is not JSON") from err
        if not isinstance(body, dict) or not isinstance(body.get("content"), list):
            raise self._invalid("the 200 response has no content list")
        if not all(isinstance(block, dict) for block in body["content"]):
            raise self._invalid("the 200 response has a malformed content block")
        usage = body.get("usage")
        if usage is not None and not _usage_ok(usage):
            raise self._invalid("the 200 response has malformed usage")
        return body

    def read_count(self, content: bytes) -> int:
        """``input_tokens`` of a token-counting answer; ``invalid_response`` when it has none."""
        try:
            body = json.loads(content)
        except (ValueError, UnicodeDecodeError) as err:
            raise self._invalid("the count_tokens response is not JSON") from err
        count = body.get("input_tokens") if isinstance(body, dict) else None
        if type(count) is not int or count < 0:
            raise self._invalid("the count_tokens response has no input_tokens count")
        return count

    def _invalid(self, what: str) -> LLMGenerateError:
        return LLMGenerateError(
            what, reason="invalid_response", retryable=False, http_status=200, provider=PROVIDER
        )

    def response(
        self, body: dict[str, Any], request_id: str | None, attempts: int, elapsed_s: float
    ) -> LLMResponse:
        metadata: dict[str, Any] = {"request_id": request_id}
        if isinstance(body.get("id"), str):
            metadata["response_id"] = body["id"]
        output = self.sent.output
        if output is not None:
            metadata["strategy"] = output.strategy
            if output.dropped:
                metadata["schema_dropped"] = list(output.dropped)
        if self.sent.ignored:
            metadata["ignored_settings"] = list(self.sent.ignored)
        text, tool_called = self._text(body["content"])
        stop_reason = body.get("stop_reason")
        finish = (
            _FINISH.get(stop_reason, stop_reason) if isinstance(stop_reason, str) else "unknown"
        )
        if tool_called and finish == "tool_use":
            finish = "stop"  # the forced tool call *is* the complete answer
        if finish != stop_reason:
            metadata["provider_finish_reason"] = stop_reason
        raw_usage = body.get("usage")
        tier = raw_usage.get("service_tier") if isinstance(raw_usage, dict) else None
        if isinstance(tier, str):
            metadata["service_tier"] = tier
        if raw_usage is None:
            # Decided: a 200 without usage keeps its text; the zero count is said, not hidden.
            metadata["usage_missing"] = True
            raw_usage = {}
        usage = Usage(
            **{f: raw_usage.get(f) or 0 for f in _USAGE_FIELDS},
            cache_write_1h_input_tokens=one_hour_writes(raw_usage),
            llm_calls=attempts,
        )
        reported = body.get("model")
        model = reported if isinstance(reported, str) and reported else self.model
        usage = usage.model_copy(update={"cost_micro": self._cost(usage, model, metadata)})
        return LLMResponse(
            text=text,
            model=model,
            finish_reason=finish,
            usage=usage,
            attempts=attempts,
            latency_ms=round(elapsed_s * 1000.0, 3),
            metadata=metadata,
        )

    def _cost(self, usage: Usage, reported_model: str, metadata: dict[str, Any]) -> int:
        """Priced by the profile's model name (what its ``pricing`` refers to), else by the name
        the API reported (an alias may resolve to a listed snapshot)."""
        cost, note = cost_micro(self.model, usage, self.request.pricing)
        if note and reported_model != self.model:
            cost, note = cost_micro(reported_model, usage, None)
        if note:
            metadata["pricing"] = note
        return cost

    def _text(self, blocks: list[dict[str, Any]]) -> tuple[str, bool]:
        output = self.sent.output
        if output is not None and output.tool is not None:
            for block in blocks:
                if block.get("type") == "tool_use" and block.get("name") == output.tool:
                    value = block.get("input")
                    if output.wrapped and isinstance(value, dict):
                        value = value.get("value")
                    return json.dumps(value, ensure_ascii=False), True
        parts = [b.get("text") for b in blocks if b.get("type") == "text"]
        if not all(isinstance(part, str) for part in parts):
            raise self._invalid("the 200 response has a text block without text")
        return "".join(parts), False  # type: ignore[arg-type]  # all str, checked above
