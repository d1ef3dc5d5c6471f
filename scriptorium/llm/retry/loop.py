"""The one retry loop every provider adapter goes through.

SDK clients are always built with their own retries off (``max_retries=0``): retrying in two places
multiplies attempts and hides them from ``attempts``/``llm_calls``. The loop decides, per failed
HTTP request, whether to try again (the adapter's classifier, which hands HTTP error responses to
:func:`~scriptorium.llm.retry.http.classify_http`), how long to wait (jittered exponential backoff,
``retry-after`` as a lower bound), and when to give up (``max_retries``, a wall-clock budget over
attempts *and* sleeps, a supervisor's ``stop_requested``). The reasoning is in
``internal_docs/llm.md``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import replace
from typing import NotRequired, TypedDict, TypeVar, Unpack

import scriptorium.llm.deadline as deadline
import scriptorium.llm.report as scope
from scriptorium.errors import LLMGenerateError, scrub_chain
from scriptorium.llm.model import Failure, RetryInfo
from scriptorium.llm.retry.http import Classify, as_failure, failure_error
from scriptorium.llm.retry.policy import SLEEP_SLICE_S, RetryHooks, RetryPolicy
from scriptorium.redaction import redact

__all__ = ["RetrySettings", "acall_with_retry", "call_with_retry"]

T = TypeVar("T")
# The name observers and log configurations know the retry records by.
_log = logging.getLogger("scriptorium.llm.retry")


class RetrySettings(TypedDict):
    """The keyword arguments of :func:`call_with_retry` and :func:`acall_with_retry` (what a
    provider call's ``retry_args`` gives)."""

    policy: RetryPolicy
    hooks: RetryHooks
    provider: str
    model: str
    #: Scrubbed from every message.
    secrets: NotRequired[Iterable[str | None]]
    #: The origin a ``connection`` failure names.
    endpoint: NotRequired[str | None]


class _Loop:
    """The state and decisions shared by the sync and async loops (only waiting differs)."""

    def __init__(
        self,
        classify: Classify,
        policy: RetryPolicy,
        hooks: RetryHooks,
        provider: str,
        model: str,
        secrets: Iterable[str | None] = (),
        endpoint: str | None = None,
    ) -> None:
        self.classify = classify
        self.endpoint = endpoint
        self.policy = policy
        self.hooks = hooks
        self.provider = provider
        self.model = model
        self.secrets = tuple(s for s in secrets if s)
        self.start = hooks.clock()
        self.attempts = 0
        self.last: Failure | None = None
        self.last_error: Exception | None = None
        #: What follows the last failed attempt: a delay, or the error that ends the call.
        self.pending: float | LLMGenerateError | None = None

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
        # A connection that failed names where it went (scheme, host, port: no path or query).
        where = f" to {self.endpoint}" if self.endpoint and failure.reason == "connection" else ""
        message = redact(
            f"{self.provider} {self.model}: {failure.reason}{where}"
            f"{' (' + failure.message + ')' if failure.message else ''}"
            f" after {self.attempts} attempt(s) in {self.elapsed():.2f}s{note}",
            self.secrets,
        )
        return failure_error(
            failure,
            message,
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

    def succeeded(self, value: T) -> tuple[T, int, float]:
        """What the loop returns for an attempt that gave ``value``."""
        return value, self.attempts, self.elapsed()

    def failed(self, err: Exception) -> None:
        """The attempt failed with ``err``: what comes next is decided now (:meth:`backoff`
        follows it, outside the ``except`` block, so retries do not nest each failure into the
        next's context)."""
        self.pending = self.after_failure(err)

    def backoff(self) -> Iterator[float]:
        """The sleep slices before the next attempt; raises the final error when there is none."""
        after, self.pending = self.pending, None
        if isinstance(after, LLMGenerateError):
            raise after
        if after is not None:
            yield from self.slices(after)

    def out_of_time(self) -> deadline.DeadlineExceeded:
        """The failure of an attempt the budget cut off while it waited (async)."""
        return deadline.DeadlineExceeded(f"no answer within the {self.policy.timeout_s:g}s budget")

    def to_failure(self, err: Exception) -> Failure:
        failure = as_failure(err, self.classify)
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
            extra={
                **scope.log_extra(),
                "reason": failure.reason,
                "delay_s": delay,
                # The attempt about to be made, of how many at most (the CLI's retry notice).
                "next_attempt": self.attempts + 1,
                "max_attempts": self.policy.max_retries + 1,
            },
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
    classify: Classify,
    **settings: Unpack[RetrySettings],
) -> tuple[T, int, float]:
    """Run ``attempt(timeout_left_s)`` (one HTTP request each) until it succeeds or the rules say
    stop. Returns ``(value, attempts, elapsed_s)``. ``settings`` are :class:`RetrySettings`.

    Raises ``LLMGenerateError`` from the last exception: the last failure's reason (also when the
    budget ends during a backoff), ``cancelled`` on ``stop_requested``. ``secrets`` are scrubbed
    from every message; a ``connection`` failure's names ``endpoint`` (an origin, as
    :func:`~scriptorium.profile.model.endpoint_origin` gives it).
    """
    loop = _Loop(classify, **settings)
    while True:
        timeout = loop.before_attempt()
        try:
            # The attempt's I/O ends when the budget does (the HTTP clients we build read it).
            with deadline.bounded(time.monotonic() + timeout):
                return loop.succeeded(attempt(timeout))
        except Exception as err:
            loop.failed(err)
        for step in loop.backoff():
            loop.hooks.sleep(step)


async def acall_with_retry(
    attempt: Callable[[float], Awaitable[T]],
    classify: Classify,
    **settings: Unpack[RetrySettings],
) -> tuple[T, int, float]:
    """The async twin of :func:`call_with_retry` (sleeps through ``hooks.asleep``)."""
    loop = _Loop(classify, **settings)
    while True:
        timeout = loop.before_attempt()
        try:
            # The attempt ends when the budget does, whatever the server sends (cancelling it
            # closes its connection).
            cut = asyncio.timeout(timeout)
            try:
                async with cut:
                    return loop.succeeded(await attempt(timeout))
            except TimeoutError as late:
                if not cut.expired():
                    raise
                raise loop.out_of_time() from late
        except Exception as err:
            loop.failed(err)
        for step in loop.backoff():
            await loop.hooks.asleep(step)
