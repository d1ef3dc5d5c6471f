"""What every provider's batch adapter shares: the call wrapper that runs each SDK call through the
retry loop, the SDK client built on first use, the errors of rows that never ran, and pricing a
succeeded row at the batch rate, and the listing of recent batches page by page."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.adapter import key_of
from scriptorium.llm.batches.port import BatchLimits, RemoteBatch, RowResult
from scriptorium.llm.model import Failure, LLMRequest, LLMResponse, ModelPrice
from scriptorium.llm.pricing import cost_micro
from scriptorium.llm.retry.loop import call_with_retry
from scriptorium.llm.retry.policy import RetryHooks, RetryPolicy

__all__ = [
    "MAX_PAGES",
    "BatchCalls",
    "Page",
    "SDKBatches",
    "batch_args",
    "batch_priced",
    "check_row",
    "recent_batches",
    "unfinished_error",
]

T = TypeVar("T")

# Reads (retrieve, list, results) are idempotent and retried like any request; a create is sent
# once: if its answer is lost, the state machine looks the batch up instead of sending it again.
_READ = RetryPolicy(max_retries=2, timeout_s=300.0)
_CREATE = RetryPolicy(max_retries=0, timeout_s=300.0)


#: A listing of recent batches stops after this many pages (a busy workspace lists many).
MAX_PAGES = 10

#: ``(cursor) -> (batches, next cursor)``: one page of a provider's batch listing, newest first
#: (the next cursor None on the last page).
Page = Callable[[str | None], tuple[list[RemoteBatch], str | None]]

#: Statuses by which an endpoint says it has no such route: a batch API it does not serve. A
#: gateway (any base URL but the provider's own) also answers 500 for a route it lacks.
_NO_ROUTE = frozenset({404, 405, 501})
_NO_ROUTE_AT_GATEWAY = _NO_ROUTE | {500}


class BatchCalls:
    """Runs one SDK call through scriptorium's retry loop, errors translated by ``classify``.

    An endpoint that answers a batch route as missing (404, 405, 501; at a gateway, 500 too) is
    told once, not retried: ``LLMGenerateError(reason="config")`` naming the model and saying
    the endpoint has no batch API."""

    def __init__(
        self,
        *,
        provider: str,
        key: str,
        classify: Callable[[BaseException], Failure],
        hooks: RetryHooks | None,
        model: str = "",
        base_url: str | None = None,
        gateway: bool = False,
    ) -> None:
        self._provider = provider
        self._key = key
        self._classify = classify
        self._hooks = hooks or RetryHooks()
        self._model = model
        self._base_url = base_url
        self._missing = _NO_ROUTE_AT_GATEWAY if gateway else _NO_ROUTE

    def _classified(self, err: BaseException) -> Failure:
        failure = self._classify(err)
        if failure.http_status in self._missing:
            return dataclasses.replace(failure, retryable=False)
        return failure

    def read(self, call: Callable[[float], T]) -> T:
        """An idempotent call (retried)."""
        return self._run(call, _READ)

    def create(self, call: Callable[[float], T]) -> T:
        """A call that creates something (never retried)."""
        return self._run(call, _CREATE)

    def _run(self, call: Callable[[float], T], policy: RetryPolicy) -> T:
        try:
            value, _, _ = call_with_retry(
                call,
                self._classified,
                policy=policy,
                hooks=self._hooks,
                provider=self._provider,
                model=self._model,
                secrets=(self._key,),
            )
        except LLMGenerateError as err:
            if err.http_status not in self._missing:
                raise
            where = self._base_url or "the endpoint"
            raise LLMGenerateError(
                f"{self._provider} {self._model or '(no model)'}: {where} has no batch API "
                f"(its batch route answered HTTP {err.http_status}); provider batches need the "
                "provider's own API or a gateway that serves its batch routes",
                reason="config",
                retryable=False,
                http_status=err.http_status,
                provider=self._provider,
                model=self._model or None,
            ) from err
        return value


def check_row(
    row: RowResult,
    provider: str,
    model: str,
    classify: Callable[[int, Mapping[str, str], Any], Failure],
) -> None:
    """Nothing for a row that succeeded; else its error, raised: a row that never ran (its batch
    expired or was canceled: :func:`unfinished_error`), or one that failed, as ``classify`` (the
    provider's reading of an HTTP status and body) reads its status and body."""
    if row.kind in ("expired", "canceled"):
        raise unfinished_error(row, provider, model)
    if row.kind == "errored":
        failure = classify(row.status, {}, row.body)
        raise LLMGenerateError(
            f"the batch row failed: {failure.message}",
            reason=failure.reason,
            retryable=failure.retryable,
            http_status=row.status,
            provider=provider,
            model=model,
        )


def unfinished_error(row: RowResult, provider: str, model: str) -> LLMGenerateError:
    """The error of a row that never ran: its batch expired, or was canceled."""
    if row.kind == "expired":
        return LLMGenerateError(
            "the provider batch expired before this row ran; resume the batch to send it again",
            reason="timeout",
            retryable=True,
            provider=provider,
            model=model,
        )
    return LLMGenerateError(
        "the provider batch was canceled before this row ran; resume the batch to send it again",
        reason="cancelled",
        retryable=True,
        provider=provider,
        model=model,
    )


def batch_priced(
    response: LLMResponse,
    request: LLMRequest,
    extra: dict[str, Any],
    prices: Mapping[str, ModelPrice] | None = None,
) -> LLMResponse:
    """``response`` priced at the batch rate from ``prices`` (the provider's table; default: the
    built-in providers' merged one), by the profile's model name (what its ``pricing`` names),
    else the name the provider reported, and marked ``service_tier: "batch"``."""
    usage = response.usage
    metadata = {k: v for k, v in response.metadata.items() if k != "pricing"}
    model = request.target.model
    cost, note = cost_micro(model, usage, request.pricing, batch=True, prices=prices)
    if note and response.model and response.model != model:
        cost, note = cost_micro(response.model, usage, None, batch=True, prices=prices)
    if note:
        metadata["pricing"] = note
    metadata.update(extra)
    metadata["service_tier"] = "batch"
    return response.model_copy(
        update={
            "usage": usage.model_copy(update={"cost_micro": cost, "llm_calls": 1}),
            "attempts": 1,
            "latency_ms": 0.0,
            "metadata": metadata,
        }
    )


def batch_args(
    request: LLMRequest, limits: BatchLimits | None, hooks: RetryHooks
) -> dict[str, Any]:
    """The arguments of a batch adapter for a run's ``request`` (its key, endpoint and model) at
    ``limits`` and ``hooks``, as a spec's ``batches`` builds one."""
    return {
        "key": key_of(request),
        "base_url": request.target.endpoint,
        "limits": limits,
        "hooks": hooks,
        "model": request.target.model,
    }


def recent_batches(page: Page, since: float) -> list[RemoteBatch]:
    """The batches created at ``since`` or later, read page by page (newest first): once a page
    reaches past ``since`` older pages cannot matter, and at most :data:`MAX_PAGES` are read."""
    found: list[RemoteBatch] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        items, cursor = page(cursor)
        found.extend(b for b in items if b.created_at >= since)
        if cursor is None or not items or min(b.created_at for b in items) < since:
            break
    return found


class SDKBatches:
    """What every provider's batch adapter holds alike: its limits, the key and base URL it was
    given, the call wrapper, and one SDK client built on first use (``make_client(is_async, key,
    base_url)``, the provider adapter's own factory) and again after each :meth:`close`."""

    def __init__(
        self,
        *,
        provider: str,
        key: str,
        base_url: str,
        limits: BatchLimits,
        hooks: RetryHooks | None,
        classify: Callable[[BaseException], Failure],
        make_client: Callable[[bool, str, str], Any],
        model: str = "",
        default_base_url: str | None = None,
    ) -> None:
        self.limits = limits
        self._key = key
        self._base_url = base_url
        self._make_client = make_client
        self._sdk: Any = None
        gateway = default_base_url is not None and base_url.rstrip("/") != default_base_url
        self._calls = BatchCalls(
            provider=provider,
            key=key,
            classify=classify,
            hooks=hooks,
            model=model,
            base_url=base_url,
            gateway=gateway,
        )

    def _client(self) -> Any:
        """The SDK client, built on first use after each :meth:`close`."""
        if self._sdk is None:
            self._sdk = self._make_client(False, self._key, self._base_url)
        return self._sdk

    def listed_since(
        self,
        since: float,
        list_call: Callable[..., Any],
        cursor: str,
        read: Callable[[Any], RemoteBatch],
    ) -> list[RemoteBatch]:
        """:func:`recent_batches` over an SDK listing whose pages hold ``data`` and ``has_more``
        and take the last batch's id as the ``cursor`` argument of ``list_call``."""

        def page(after: str | None) -> tuple[list[RemoteBatch], str | None]:
            kwargs: dict[str, Any] = {"limit": 100}
            if after is not None:
                kwargs[cursor] = after
            listed = self._calls.read(lambda t: list_call(**kwargs, timeout=t))
            items = [read(b) for b in listed.data]
            return items, (items[-1].id if listed.has_more and items else None)

        return recent_batches(page, since)

    def close(self) -> None:
        """Close the SDK client's connections (a later call opens new ones)."""
        sdk, self._sdk = self._sdk, None
        if sdk is not None:
            sdk.close()
