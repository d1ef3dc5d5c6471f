"""The one retry loop every provider adapter goes through.

SDK clients are always built with their own retries off (``max_retries=0``): retrying in two places
multiplies attempts and hides them from ``attempts``/``llm_calls``. This module decides, per failed
HTTP request, whether to try again (:func:`classify_http` for responses, an adapter's own helper for
transport exceptions), how long to wait (jittered exponential backoff, ``retry-after`` as a lower
bound), and when to give up (``max_retries``, a wall-clock budget over attempts *and* sleeps, a
supervisor's ``stop_requested``). The rules are those of the LLM layer; the reasoning is in
``internal_docs/llm.md``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from scriptorium.errors import LLMGenerateError, redact, scrub_chain
from scriptorium.observe import scope

__all__ = [
    "Failure",
    "RetryHooks",
    "RetryInfo",
    "RetryPolicy",
    "acall_with_retry",
    "call_with_retry",
    "classify_http",
    "parse_retry_after",
]

T = TypeVar("T")
_log = logging.getLogger(__name__)

#: Sleeps are cut into slices this long so a supervisor can stop us and see a heartbeat.
SLEEP_SLICE_S = 0.5


@dataclass(frozen=True)
class Failure:
    """The classification of one failed attempt. ``message`` is safe to show (no key values)."""

    reason: str
    retryable: bool
    http_status: int | None = None
    retry_after_s: float | None = None
    message: str = ""


@dataclass(frozen=True)
class RetryInfo:
    """What ``on_retry`` observers receive before each backoff sleep."""

    attempt: int
    delay_s: float
    failure: Failure
    elapsed_s: float


@dataclass(frozen=True)
class RetryPolicy:
    """Limits of the loop: at most ``max_retries`` retries within ``timeout_s`` of wall clock."""

    max_retries: int = 2
    timeout_s: float = 60.0
    base_delay_s: float = 1.5
    max_delay_s: float = 30.0
    max_retry_after_s: float = 60.0

    def backoff_s(self, retry_index: int, jitter: Callable[[float, float], float]) -> float:
        """The jittered delay before retry number ``retry_index`` (0 for the first retry)."""
        exponent = min(retry_index, 32)  # 2**32 * base is far past any cap; avoids huge floats
        return min(self.max_delay_s, self.base_delay_s * 2.0**exponent) * jitter(0.75, 1.25)


@dataclass(frozen=True)
class RetryHooks:
    """Everything time-related or supervisory, injectable for tests and for supervisors."""

    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    asleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    jitter: Callable[[float, float], float] = random.uniform
    #: Checked before each request and every 0.5 s of sleep; true -> ``reason="cancelled"``.
    stop_requested: Callable[[], bool] | None = None
    #: Called at each sleep slice, so a supervisor sees a long backoff as progress.
    heartbeat: Callable[[], None] | None = None
    #: Observers told about each retry; their exceptions are swallowed.
    on_retry: tuple[Callable[[RetryInfo], None], ...] = ()


# --- classification of HTTP responses -------------------------------------------------------

_QUOTA_CODES = ("insufficient_quota", "billing", "spend_limit", "spending_limit", "credit")
# Free text only where no provider gives a code: Anthropic's credit/spend-limit messages.
_QUOTA_WORDS = ("spend limit", "spending limit", "credit balance", "billing", "insufficient_quota")
_CONTEXT_CODES = ("context_length_exceeded", "context_window", "string_above_max_length")
# Anthropic reports an over-long prompt as a plain invalid_request_error; only its text says so.
_CONTEXT_WORDS = ("prompt is too long", "context window", "context length", "maximum context")

_STATUS_REASONS: dict[int, tuple[str, bool]] = {
    400: ("invalid_request", False),
    401: ("auth", False),
    402: ("quota", False),
    403: ("permission", False),
    404: ("not_found", False),
    408: ("timeout", True),
    409: ("server_error", True),
    413: ("invalid_request", False),
    422: ("invalid_request", False),
    429: ("rate_limited", True),
    504: ("timeout", True),
    529: ("overloaded", True),
}


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        # Plain dicts are case-sensitive; httpx.Headers is not. Fall back to a scan.
        for key, candidate in headers.items():
            if key.lower() == name:
                return candidate
    return value


def _error_codes(body: Any) -> tuple[list[str], str]:
    """The type/code tokens of an error body as sent, and its message. They are lower-cased only
    for matching: a message keeps them as sent, so a key echoed in one is still redacted (the
    redaction is case-sensitive, and a lower-cased key would slip past it)."""
    codes: list[str] = []
    message = ""
    if not isinstance(body, Mapping):
        return codes, str(body) if isinstance(body, str) else ""
    error = body.get("error")
    for holder in (body, error if isinstance(error, Mapping) else {}):
        for key in ("type", "code", "error_code"):
            value = holder.get(key)
            if isinstance(value, str) and value and value != "error":
                codes.append(value)
        if isinstance(holder.get("message"), str):
            message = holder["message"]
    if isinstance(error, str):
        message = error
    return codes, message


def classify_http(status: int, headers: Mapping[str, str], body: Any) -> Failure:
    """Classify an HTTP error response by status, the body's error ``type``/``code`` and the
    ``x-should-retry`` header. ``body`` is the parsed JSON (or text, or None)."""
    shown, text = _error_codes(body)
    codes = [code.lower() for code in shown]
    lowered = text.lower()
    if status in _STATUS_REASONS:
        reason, retryable = _STATUS_REASONS[status]
    elif status >= 500:
        reason, retryable = "server_error", True
    else:
        reason, retryable = "invalid_request", False
    if "overloaded_error" in codes:
        reason, retryable = "overloaded", True
    elif any(q in c for c in codes for q in _QUOTA_CODES) or (
        status in (400, 403, 429) and any(w in lowered for w in _QUOTA_WORDS)
    ):
        reason, retryable = "quota", False
    elif status in (400, 413) and (
        any(k in c for c in codes for k in _CONTEXT_CODES)
        or any(w in lowered for w in _CONTEXT_WORDS)
    ):
        reason = "context_window"
    should_retry = (_header(headers, "x-should-retry") or "").strip().lower()
    if should_retry == "true" and reason != "quota":
        retryable = True
    elif should_retry == "false":
        retryable = False
    kind = f" {shown[0]}" if shown else ""
    detail = f": {text[:300]}" if text else ""
    return Failure(
        reason=reason,
        retryable=retryable,
        http_status=status,
        retry_after_s=parse_retry_after(headers),
        message=f"HTTP {status}{kind}{detail}",
    )


def _finite_non_negative(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms`` beats ``retry-after`` (seconds or an
    HTTP date, relative to ``now``, default the wall clock). Missing or unparsable -> None."""
    millis = _header(headers, "retry-after-ms")
    if millis is not None:
        value = _finite_non_negative(millis.strip())
        if value is not None:
            return value / 1000.0
    raw = _header(headers, "retry-after")
    if raw is None or not raw.strip():
        return None
    seconds = _finite_non_negative(raw.strip())
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a zone-less one is taken as such
        return None
    delta = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, delta) if math.isfinite(delta) else None


# --- the loop ----------------------------------------------------------------------------------


class _Loop:
    """The state and decisions shared by the sync and async loops (only waiting differs)."""

    def __init__(
        self,
        classify: Callable[[BaseException], Failure],
        policy: RetryPolicy,
        hooks: RetryHooks,
        provider: str,
        model: str,
        secrets: Iterable[str | None],
    ) -> None:
        self.classify = classify
        self.policy = policy
        self.hooks = hooks
        self.provider = provider
        self.model = model
        self.secrets = tuple(s for s in secrets if s)
        self.start = hooks.clock()
        self.attempts = 0
        self.last: Failure | None = None
        self.last_error: Exception | None = None

    def elapsed(self) -> float:
        return max(0.0, self.hooks.clock() - self.start)

    def stop_requested(self) -> bool:
        check = self.hooks.stop_requested
        if check is None:
            return False
        try:
            return bool(check())
        except Exception:
            return False  # a broken supervisor check must not end or crash the call

    def error(self, failure: Failure, note: str = "") -> LLMGenerateError:
        message = redact(
            f"{self.provider} {self.model}: {failure.reason}"
            f"{' (' + failure.message + ')' if failure.message else ''}"
            f" after {self.attempts} attempt(s) in {self.elapsed():.2f}s{note}",
            self.secrets,
        )
        return LLMGenerateError(
            message,
            reason=failure.reason,
            retryable=failure.retryable,
            http_status=failure.http_status,
            retry_after_s=failure.retry_after_s,
            attempts=self.attempts,
            elapsed_s=round(self.elapsed(), 6),
            provider=self.provider,
            model=self.model,
        )

    def before_attempt(self) -> float:
        """The per-attempt timeout for the next request; raises when we must not make it."""
        if self.stop_requested():
            raise self.error(Failure("cancelled", False, message="stop requested"))
        left = self.policy.timeout_s - self.elapsed()
        if left <= 0:
            last = self.last or Failure("timeout", True)
            raise self.error(last, f"; budget of {self.policy.timeout_s:g}s used up")
        self.attempts += 1
        return left

    def to_failure(self, err: Exception) -> Failure:
        if isinstance(err, LLMGenerateError):  # an adapter already decided (e.g. invalid_response)
            return Failure(
                reason=err.reason or "invalid_response",
                retryable=bool(err.retryable),
                http_status=err.http_status,
                retry_after_s=err.retry_after_s,
                message=err.message,
            )
        try:
            failure = self.classify(err)
        except Exception as broken:
            # A classifier bug must not let a foreign exception escape: report it as unknown.
            note = f"unclassifiable {type(err).__name__} ({type(broken).__name__} in classify)"
            failure = Failure("invalid_response", False, message=note)
        return replace(failure, message=redact(failure.message, self.secrets))

    def after_failure(self, err: Exception) -> float | LLMGenerateError:
        """How long to wait before the next attempt, or the final error when there is none (its
        cause is the scrubbed stand-in of ``err``: an SDK error may carry an echoed key)."""
        failure = self.to_failure(err)
        self.last, self.last_error = failure, err
        retry_index = self.attempts - 1
        if not failure.retryable or retry_index >= self.policy.max_retries:
            return self.final(failure, err)
        delay = self.policy.backoff_s(retry_index, self.hooks.jitter)
        if failure.retry_after_s is not None:
            if failure.retry_after_s > self.policy.max_retry_after_s:
                return self.final(failure, err, "; retry-after exceeds the limit")
            delay = max(delay, failure.retry_after_s)
        if self.elapsed() + delay >= self.policy.timeout_s:
            # Sleeping into a budget we already know is too short only delays the same answer.
            return self.final(failure, err, f"; budget of {self.policy.timeout_s:g}s used up")
        info = RetryInfo(
            attempt=self.attempts, delay_s=delay, failure=failure, elapsed_s=self.elapsed()
        )
        _log.info(
            "retrying %s %s after %s (attempt %d), waiting %.3fs",
            self.provider,
            self.model,
            failure.reason,
            self.attempts,
            delay,
            extra={**scope.log_extra(), "reason": failure.reason, "delay_s": delay},
        )
        scope.notify_retry(info)
        for observer in self.hooks.on_retry:
            try:
                observer(info)
            except Exception:  # observers watch; they never change the outcome
                _log.debug("on_retry observer failed", exc_info=True, extra=scope.log_extra())
        return delay

    def final(
        self, failure: Failure, err: BaseException | None, note: str = ""
    ) -> LLMGenerateError:
        """The error that ends the call, chained to a scrubbed stand-in of ``err``. The caller
        raises it outside its ``except`` block, so the original is not its ``__context__``."""
        error = self.error(failure, note)
        if err is not None:
            error.__cause__ = error.__context__ = scrub_chain(err, self.secrets)
            error.__suppress_context__ = True
        return error

    def slices(self, delay: float) -> Iterator[float]:
        """Sleep slices of at most 0.5 s, checking ``stop_requested`` and beating before each.

        Counted by what was asked, not by the clock, so a fake clock that does not move still ends.
        """
        left = delay
        while left > 0:
            if self.stop_requested():
                last = self.last
                raise self.final(
                    Failure(
                        "cancelled",
                        False,
                        last.http_status if last else None,
                        message="stop requested during backoff",
                    ),
                    self.last_error,
                )
            beat = self.hooks.heartbeat
            if beat is not None:
                try:
                    beat()
                except Exception:  # a broken heartbeat sink is not the call failing
                    _log.debug("heartbeat failed", exc_info=True, extra=scope.log_extra())
            step = min(SLEEP_SLICE_S, left)
            yield step
            left -= step


def call_with_retry(
    attempt: Callable[[float], T],
    classify: Callable[[BaseException], Failure],
    *,
    policy: RetryPolicy,
    hooks: RetryHooks,
    provider: str,
    model: str,
    secrets: Iterable[str | None] = (),
) -> tuple[T, int, float]:
    """Run ``attempt(timeout_left_s)`` (one HTTP request each) until it succeeds or the rules say
    stop. Returns ``(value, attempts, elapsed_s)``.

    Raises ``LLMGenerateError`` from the last exception: the last failure's reason (also when the
    budget ends during a backoff), ``cancelled`` on ``stop_requested``. ``secrets`` are scrubbed
    from every message.
    """
    loop = _Loop(classify, policy, hooks, provider, model, secrets)
    while True:
        timeout = loop.before_attempt()
        try:
            value = attempt(timeout)
        except Exception as err:
            delay = loop.after_failure(err)
        else:
            return value, loop.attempts, loop.elapsed()
        if isinstance(delay, LLMGenerateError):
            raise delay
        # Outside the except block, so retries do not nest each failure into the next's context.
        for step in loop.slices(delay):
            hooks.sleep(step)


async def acall_with_retry(
    attempt: Callable[[float], Awaitable[T]],
    classify: Callable[[BaseException], Failure],
    *,
    policy: RetryPolicy,
    hooks: RetryHooks,
    provider: str,
    model: str,
    secrets: Iterable[str | None] = (),
) -> tuple[T, int, float]:
    """The async twin of :func:`call_with_retry` (sleeps through ``hooks.asleep``)."""
    loop = _Loop(classify, policy, hooks, provider, model, secrets)
    while True:
        timeout = loop.before_attempt()
        try:
            value = await attempt(timeout)
        except Exception as err:
            delay = loop.after_failure(err)
        else:
            return value, loop.attempts, loop.elapsed()
        if isinstance(delay, LLMGenerateError):
            raise delay
        # Outside the except block, so retries do not nest each failure into the next's context.
        for step in loop.slices(delay):
            await hooks.asleep(step)
