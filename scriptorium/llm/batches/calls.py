"""What every provider's batch adapter shares: the call wrapper that runs each SDK call through the
retry loop, the SDK client built on first use, the errors of rows that never ran, and pricing a
succeeded row at the batch rate."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.batches.port import BatchLimits, RowResult
from scriptorium.llm.model import Failure, LLMRequest, LLMResponse, ModelPrice
from scriptorium.llm.pricing import cost_micro
from scriptorium.llm.retry.loop import call_with_retry
from scriptorium.llm.retry.policy import RetryHooks, RetryPolicy

__all__ = ["BatchCalls", "SDKBatches", "batch_priced", "unfinished_error"]

T = TypeVar("T")

# Reads (retrieve, list, results) are idempotent and retried like any request; a create is sent
# once: if its answer is lost, the state machine looks the batch up instead of sending it again.
_READ = RetryPolicy(max_retries=2, timeout_s=300.0)
_CREATE = RetryPolicy(max_retries=0, timeout_s=300.0)


class BatchCalls:
    """Runs one SDK call through scriptorium's retry loop, errors translated by ``classify``."""

    def __init__(
        self,
        *,
        provider: str,
        key: str,
        classify: Callable[[BaseException], Failure],
        hooks: RetryHooks | None,
    ) -> None:
        self._provider = provider
        self._key = key
        self._classify = classify
        self._hooks = hooks or RetryHooks()

    def read(self, call: Callable[[float], T]) -> T:
        """An idempotent call (retried)."""
        return self._run(call, _READ)

    def create(self, call: Callable[[float], T]) -> T:
        """A call that creates something (never retried)."""
        return self._run(call, _CREATE)

    def _run(self, call: Callable[[float], T], policy: RetryPolicy) -> T:
        value, _, _ = call_with_retry(
            call,
            self._classify,
            policy=policy,
            hooks=self._hooks,
            provider=self._provider,
            model="",
            secrets=(self._key,),
        )
        return value


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
    ) -> None:
        self.limits = limits
        self._key = key
        self._base_url = base_url
        self._make_client = make_client
        self._sdk: Any = None
        self._calls = BatchCalls(provider=provider, key=key, classify=classify, hooks=hooks)

    def _client(self) -> Any:
        """The SDK client, built on first use after each :meth:`close`."""
        if self._sdk is None:
            self._sdk = self._make_client(False, self._key, self._base_url)
        return self._sdk

    def close(self) -> None:
        """Close the SDK client's connections (a later call opens new ones)."""
        sdk, self._sdk = self._sdk, None
        if sdk is not None:
            sdk.close()
