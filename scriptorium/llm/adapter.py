"""The one shape of an SDK-backed provider adapter, shared by every provider package.

An adapter is two pieces:

- a per-request **call** (:class:`SDKCall`): built from one ``LLMRequest``, it checks what the
  request must have (a key, a model), builds the body once, sends it on an SDK client (one
  attempt, sync or async), and turns what came back into the ``LLMResponse``;
- the **client** (:class:`SDKAdapter`): the ``Client``/``AsyncClient`` users hold. It keeps the
  retry hooks and the cache of SDK clients (built by an injectable ``sdk_factory``, one per
  endpoint and key, and per event loop for async), and runs each call through the one retry loop
  with the provider's one classifier.

A provider's client *declares* its pieces and writes none of the entry points: its call
(``call_type``, or :meth:`SDKAdapter.call` where the request picks one), its classifier
(``classify``, a plain function), and its stream source (``stream_source``: the
:class:`~scriptorium.llm.streaming.StreamSource` of a call, read by the shared
:func:`~scriptorium.llm.streaming.drive` / ``adrive``). ``generate``, ``agenerate``, ``stream``,
``astream``, ``verify`` and ``from_config`` (what a spec's ``client`` names) are written here once.
A provider whose SDK streams some other way declares its own ``stream_drive`` (and
``stream_adrive``, or None to run the sync stream in a worker thread).

:func:`verify_request` is the request every ``verify`` sends, whatever the provider.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Hashable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar

from pydantic import SecretStr

from scriptorium.llm._clients import ClientCache
from scriptorium.llm.model import Failure, LLMRequest, LLMResponse, Target
from scriptorium.llm.retry.http import Classify
from scriptorium.llm.retry.loop import acall_with_retry, call_with_retry
from scriptorium.llm.retry.policy import RetryHooks, RetryPolicy
from scriptorium.llm.secrets import scrub_response
from scriptorium.llm.streaming import StreamItem, adrive, drive
from scriptorium.profile.model import ExecutionSettings, endpoint_origin
from scriptorium.prompt.model import Message

if TYPE_CHECKING:
    from scriptorium.llm.registry import ProviderConfig

__all__ = [
    "GATEWAY_COST_HEADERS",
    "GATEWAY_REQUEST_ID_HEADERS",
    "VERIFY_PROMPT",
    "AsyncStreamDrive",
    "CallSource",
    "SDKAdapter",
    "SDKCall",
    "SDKFactory",
    "StreamDrive",
    "forced_tool_finish",
    "key_of",
    "reply_metadata",
    "verify_request",
]

#: ``sdk_factory(is_async, api_key, base_url)`` -> an SDK client (retries off).
SDKFactory = Callable[[bool, str, str], Any]

#: ``drive(source, client, hooks, classify)``: how a provider's stream is read
#: (:func:`scriptorium.llm.streaming.drive` unless it declares another).
StreamDrive = Callable[[Any, Any, RetryHooks, Classify], Iterator[StreamItem]]
#: The async twin of :data:`StreamDrive`.
AsyncStreamDrive = Callable[[Any, Any, RetryHooks, Classify], AsyncIterator[StreamItem]]

R = TypeVar("R")
C = TypeVar("C", bound="SDKCall[Any]")

#: The one user message of a verify request.
VERIFY_PROMPT = "ping"


def verify_request(
    target: Target,
    api_key: SecretStr | str | None,
    *,
    max_tokens: int = 1,
    options: Mapping[str, Any] | None = None,
    source: str | None = None,
) -> LLMRequest:
    """The smallest real request that proves ``target`` works with ``api_key``: one short user
    message, ``max_tokens`` of output (the least the provider accepts), no retries (a verify
    reports what one request says) and 30 seconds."""
    return LLMRequest(
        target=target,
        api_key=api_key,
        messages=(Message(role="user", content=VERIFY_PROMPT),),
        settings=ExecutionSettings(max_tokens=max_tokens, max_retries=0, timeout_s=30.0),
        options=dict(options or {}),
        profile_source=source,
    )


#: Headers a gateway or proxy in front of a provider puts its own request id in, in the order
#: they are trusted; read when the provider's own request id header is absent.
GATEWAY_REQUEST_ID_HEADERS = ("x-request-id", "x-litellm-call-id", "x-amzn-requestid")
#: Headers a gateway reports the cost it charged in (USD), kept as reported next to
#: scriptorium's own ``cost_micro``, never in its place.
GATEWAY_COST_HEADERS = ("x-litellm-response-cost",)
_HEADER_VALUE_CHARS = 200


def _header(headers: Any, name: str) -> str | None:
    try:
        value = headers.get(name)
    except Exception:  # a headers object of another shape: nothing to read
        return None
    if not isinstance(value, str) or not value.strip():
        return None
    return "".join(c for c in value.strip()[:_HEADER_VALUE_CHARS] if c.isprintable())


def reply_metadata(headers: Any, own_request_id: str) -> dict[str, Any]:
    """What an answer's headers say about it, for ``LLMResponse.metadata``: ``request_id`` (the
    provider's own header ``own_request_id``, else a gateway's, named in ``request_id_header``)
    and, when a gateway reports one, ``gateway_cost`` (``{"header", "usd"}``, as reported). One
    helper for every adapter and path (plain answers and streams)."""
    metadata: dict[str, Any] = {"request_id": _header(headers, own_request_id)}
    if metadata["request_id"] is None:
        for name in GATEWAY_REQUEST_ID_HEADERS:
            found = _header(headers, name)
            if found is not None and name != own_request_id:
                metadata.update(request_id=found, request_id_header=name)
                break
    for name in GATEWAY_COST_HEADERS:
        reported = _header(headers, name)
        if reported is None:
            continue
        try:
            usd: float | str = float(reported)
        except ValueError:
            usd = reported
        metadata["gateway_cost"] = {"header": name, "usd": usd}
        break
    return metadata


def forced_tool_finish(finish: str, answered_by_tool: bool) -> str:
    """The finish reason of an answer that came as the forced tool call of the ``tool``
    strategy: ``stop``, since the call *is* the complete answer (the API says ``tool_use`` /
    ``tool_calls``, or ``stop``, depending on the provider and gateway). Other finishes stand."""
    return "stop" if answered_by_tool and finish == "tool_use" else finish


def key_of(request: LLMRequest) -> str:
    """The request's key value; ``""`` when it has none (an empty key is no key)."""
    value: Any = request.api_key  # a str only if a caller bypassed validation (model_copy)
    return value.get_secret_value() if isinstance(value, SecretStr) else str(value or "")


class SDKCall(Generic[R]):
    """One request's translation to and from a provider's API (see the module). Subclasses check
    the request, build the body, and implement :meth:`send`, :meth:`asend` and :meth:`response`;
    ``R`` is what one successful attempt gives."""

    provider: ClassVar[str]
    default_base_url: ClassVar[str]

    def __init__(self, request: LLMRequest, key: str) -> None:
        self.request = request
        self.model = request.target.model
        self.key = key
        self.base_url = request.target.endpoint or self.default_base_url
        #: What tells this call's SDK client apart besides the key: the base URL, or for a cloud
        #: platform the provider's description of the route (hashable; its factory builds from it).
        self.slot: Hashable = self.base_url
        #: Every secret the request carries: its key and, on a route whose SDK signs requests,
        #: the signing credentials (a subclass adds them). Scrubbed from errors and answers.
        self.secrets: tuple[str, ...] = (key,) if key else ()

    def retry_args(self, hooks: RetryHooks) -> dict[str, Any]:
        """The retry loop's arguments for this call: its policy from the request's settings."""
        settings = self.request.settings
        budget = self.request.budget_s
        timeout_s = settings.timeout_s if budget is None else min(settings.timeout_s, budget)
        return {
            "policy": RetryPolicy(max_retries=settings.max_retries, timeout_s=timeout_s),
            "hooks": hooks,
            "provider": self.provider,
            "model": self.model,
            "secrets": self.secrets,
            "endpoint": endpoint_origin(self.base_url),
        }

    def send(self, client: Any, timeout_s: float) -> R:
        """One attempt on the SDK client ``client``; raises whatever the SDK raises."""
        raise NotImplementedError

    async def asend(self, client: Any, timeout_s: float) -> R:
        """The async twin of :meth:`send` (``client`` is an async SDK client)."""
        raise NotImplementedError

    def response(self, result: R, attempts: int, elapsed_s: float) -> LLMResponse:
        """The ``LLMResponse`` of the successful attempt's ``result``."""
        raise NotImplementedError

    def answer(self, result: R, attempts: int, elapsed_s: float) -> LLMResponse:
        """:meth:`response`, with every secret the request carried scrubbed from it (a server
        may echo a key in a response id, a model name or a header): how every answer of an SDK
        adapter leaves it, plain, streamed or from a provider batch."""
        return scrub_response(self.response(result, attempts, elapsed_s), self.secrets)


class CallSource(Generic[R]):
    """The part of a :class:`~scriptorium.llm.streaming.StreamSource` every SDK call shares: the
    provider, model, key and secrets of ``call``, its retry arguments and its answer. A
    provider's source adds how to open, fold and read its stream."""

    def __init__(self, call: SDKCall[R]) -> None:
        self.call = call
        self.provider = call.provider
        self.model = call.model
        self.key = call.key
        #: Every secret the request carries (a route's signing credentials too), scrubbed from
        #: the stream's errors.
        self.secrets = call.secrets

    def retry_args(self, hooks: RetryHooks) -> dict[str, Any]:
        """The call's retry arguments."""
        return self.call.retry_args(hooks)

    def response(self, result: R, attempts: int, elapsed_s: float) -> LLMResponse:
        """The call's answer of a reading (secrets scrubbed)."""
        return self.call.answer(result, attempts, elapsed_s)


class SDKAdapter(Generic[C]):
    """``Client``, ``AsyncClient``, ``StreamingClient`` and ``Verifier`` over one provider's SDK
    (see the module for what a provider declares).

    ``hooks`` inject clock, sleep, jitter and supervision into the retry loop; ``sdk_factory``
    builds SDK clients (default: the provider's real SDK with ``max_retries=0``); ``options``
    are the profile's (the route ``verify`` takes when it is given none).
    """

    #: The provider's name (``ProviderSpec.name``).
    provider: ClassVar[str]
    #: The output tokens its verify asks for.
    verify_max_tokens: ClassVar[int] = 1
    # The declared pieces below are class attributes (a class, or a function wrapped in
    # ``staticmethod``), annotated without ClassVar so that type checkers do not bind them.
    #: The call of a request, where one type serves every request (else :meth:`call`).
    call_type: Callable[[LLMRequest], C]
    #: The stream source of a call (read by :attr:`stream_drive`); None where the provider's
    #: stream driver reads the call itself.
    stream_source: Callable[[Any], Any] | None = None
    #: How a stream source is read on a sync SDK client.
    stream_drive: StreamDrive = staticmethod(drive)
    #: How it is read on an async SDK client; None: the sync stream runs in a worker thread
    #: (an SDK without async clients).
    stream_adrive: AsyncStreamDrive | None = staticmethod(adrive)
    #: Builds its SDK clients when no ``sdk_factory`` is given (the real SDK, retries off).
    default_factory: SDKFactory

    def __init__(
        self,
        *,
        hooks: RetryHooks | None = None,
        sdk_factory: SDKFactory | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        #: The retry loop's hooks.
        self.hooks = hooks or RetryHooks()
        #: The SDK clients, one per endpoint and key (and event loop, for async).
        self.clients = ClientCache(sdk_factory or self.default_factory)
        #: The profile's options (empty for a client shared by every profile).
        self.options = dict(options or {})

    @classmethod
    def from_config(cls, config: ProviderConfig) -> Self:
        """The client a spec's ``client`` builds: the profile's options and retry hooks."""
        return cls(options=config.options, hooks=config.hooks)

    def call(self, request: LLMRequest) -> C:
        """The call for ``request`` (checked, body built): :attr:`call_type`'s."""
        return self.call_type(request)

    @staticmethod
    def classify(err: BaseException) -> Failure:
        """The provider's one classifier of what its SDK raises (declared by each provider)."""
        raise NotImplementedError

    def stream(self, request: LLMRequest) -> Iterator[StreamItem]:
        """``request`` streamed: text chunks as they arrive, then the ``LLMResponse``; retried
        only before the first chunk (:mod:`scriptorium.llm.streaming`)."""
        call = self.call(request)
        client = self.clients.sync(call.slot, call.key)
        yield from self.stream_drive(self._source(call), client, self.hooks, self.classify)

    async def astream(self, request: LLMRequest) -> AsyncIterator[StreamItem]:
        """The async twin of :meth:`stream`."""
        if self.stream_adrive is None:
            async for item in _in_thread(self.stream(request)):
                yield item
            return
        call = self.call(request)
        client = await self.clients.async_(call.slot, call.key)
        async for item in self.stream_adrive(self._source(call), client, self.hooks, self.classify):
            yield item

    def _source(self, call: C) -> Any:
        return call if self.stream_source is None else self.stream_source(call)

    def generate(self, request: LLMRequest) -> LLMResponse:
        """Send ``request`` through the retry loop; raises ``LLMGenerateError``."""
        call = self.call(request)
        client = self.clients.sync(call.slot, call.key)
        started = time.perf_counter()  # after a first-use SDK import: not the request's time
        result, attempts, _ = call_with_retry(
            lambda timeout_s: call.send(client, timeout_s),
            self.classify,
            **call.retry_args(self.hooks),
        )
        return call.answer(result, attempts, time.perf_counter() - started)

    async def agenerate(self, request: LLMRequest) -> LLMResponse:
        """The async twin of :meth:`generate`."""
        call = self.call(request)
        client = await self.clients.async_(call.slot, call.key)
        started = time.perf_counter()
        result, attempts, _ = await acall_with_retry(
            lambda timeout_s: call.asend(client, timeout_s),
            self.classify,
            **call.retry_args(self.hooks),
        )
        return call.answer(result, attempts, time.perf_counter() - started)

    def verify(
        self,
        target: Target,
        api_key: SecretStr | str | None,
        *,
        options: Mapping[str, Any] | None = None,
    ) -> LLMResponse:
        """A minimal real request (:func:`verify_request`) proving the key, endpoint and model
        (through the route ``options`` choose, such as a cloud platform or a region; None: this
        client's profile's); raises ``LLMGenerateError`` saying which failed."""
        request = verify_request(
            target,
            api_key,
            max_tokens=self.verify_max_tokens,
            options=self.options if options is None else options,
        )
        return self.generate(request)

    def close(self) -> None:
        """Close the sync SDK clients' connection pools (they are rebuilt if used again)."""
        self.clients.close()

    async def aclose(self) -> None:
        """Close the async SDK clients of the running event loop (``asyncio.run`` also closes
        them when its loop shuts down)."""
        await self.clients.aclose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def _in_thread(items: Iterator[StreamItem]) -> AsyncIterator[StreamItem]:
    """``items`` read one step at a time in a worker thread (closed when the reading ends)."""
    done = object()
    try:
        while True:
            item = await asyncio.to_thread(next, items, done)
            if item is done:
                return
            yield item  # type: ignore[misc]  # not the sentinel
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()
