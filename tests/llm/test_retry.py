"""The retry loop, pure: fake clock and sleep, scripted attempts, no network."""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.retry import (
    Failure,
    RetryHooks,
    RetryInfo,
    RetryPolicy,
    acall_with_retry,
    call_with_retry,
    classify_http,
    parse_retry_after,
)


class FakeTime:
    """A clock that only moves when something sleeps or an attempt takes time."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []
        self.beats = 0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)

    def beat(self) -> None:
        self.beats += 1

    def hooks(self, **changes: Any) -> RetryHooks:
        base: dict[str, Any] = {
            "clock": self.clock,
            "sleep": self.sleep,
            "asleep": self.asleep,
            "jitter": lambda low, high: 1.0,
            "heartbeat": self.beat,
        }
        base.update(changes)
        return RetryHooks(**base)


class Boom(Exception):
    """A transport failure carrying the Failure it should be classified as."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def by_failure(err: BaseException) -> Failure:
    assert isinstance(err, Boom)
    return err.failure


RATE = Failure("rate_limited", True, 429, message="HTTP 429")
OVERLOADED = Failure("overloaded", True, 529, message="HTTP 529")
AUTH = Failure("auth", False, 401, message="HTTP 401")


def scripted(
    time_: FakeTime, outcomes: list[Failure | str], took_s: float = 0.0
) -> tuple[Callable[[float], str], list[float]]:
    """An attempt function failing or succeeding in turn, recording the timeouts it got."""
    timeouts: list[float] = []
    queue = list(outcomes)

    def attempt(timeout_s: float) -> str:
        timeouts.append(timeout_s)
        time_.now += took_s
        outcome = queue.pop(0)
        if isinstance(outcome, Failure):
            raise Boom(outcome)
        return outcome

    return attempt, timeouts


def run(
    attempt: Callable[[float], str], hooks: RetryHooks, policy: RetryPolicy | None = None
) -> tuple[str, int, float]:
    return call_with_retry(
        attempt, by_failure, policy=policy or RetryPolicy(), hooks=hooks, provider="p", model="m"
    )


def failure_of(
    attempt: Callable[[float], str], hooks: RetryHooks, policy: RetryPolicy | None = None
) -> LLMGenerateError:
    with pytest.raises(LLMGenerateError) as caught:
        run(attempt, hooks, policy)
    return caught.value


def test_a_first_success_is_one_attempt_without_sleeping() -> None:
    time_ = FakeTime()
    attempt, timeouts = scripted(time_, ["ok"], took_s=0.25)
    assert run(attempt, time_.hooks()) == ("ok", 1, 0.25)
    assert time_.sleeps == []
    assert timeouts == [60.0]


def test_a_retryable_failure_is_retried_after_the_backoff() -> None:
    time_ = FakeTime()
    attempt, _ = scripted(time_, [RATE, "ok"])
    value, attempts, elapsed = run(attempt, time_.hooks())
    assert (value, attempts) == ("ok", 2)
    assert sum(time_.sleeps) == pytest.approx(1.5)
    assert elapsed == pytest.approx(1.5)


def test_sleeps_are_sliced_into_half_seconds_with_a_heartbeat_each() -> None:
    time_ = FakeTime()
    attempt, _ = scripted(time_, [RATE, "ok"])
    run(attempt, time_.hooks())
    assert time_.sleeps == [0.5, 0.5, 0.5]
    assert time_.beats == 3


def test_backoff_doubles_and_is_capped_then_jittered() -> None:
    policy = RetryPolicy()
    seen: list[tuple[float, float]] = []

    def jitter(low: float, high: float) -> float:
        seen.append((low, high))
        return 1.25

    assert [policy.backoff_s(n, lambda a, b: 1.0) for n in range(6)] == [
        1.5,
        3.0,
        6.0,
        12.0,
        24.0,
        30.0,
    ]
    assert policy.backoff_s(50, jitter) == pytest.approx(37.5)
    assert seen == [(0.75, 1.25)]


def test_the_per_attempt_timeout_is_what_is_left_of_the_budget() -> None:
    time_ = FakeTime()
    attempt, timeouts = scripted(time_, [RATE, "ok"], took_s=2.0)
    run(attempt, time_.hooks(), RetryPolicy(timeout_s=10.0))
    assert timeouts == [10.0, pytest.approx(10.0 - 2.0 - 1.5)]


def test_retry_after_is_a_lower_bound_on_the_delay() -> None:
    time_ = FakeTime()
    attempt, _ = scripted(time_, [Failure("rate_limited", True, 429, retry_after_s=4.0), "ok"])
    run(attempt, time_.hooks())
    assert sum(time_.sleeps) == pytest.approx(4.0)


def test_a_retry_after_beyond_the_limit_fails_at_once_as_retryable() -> None:
    time_ = FakeTime()
    attempt, _ = scripted(time_, [Failure("rate_limited", True, 429, retry_after_s=3600.0)])
    err = failure_of(attempt, time_.hooks())
    assert (err.reason, err.retryable, err.retry_after_s, err.attempts) == (
        "rate_limited",
        True,
        3600.0,
        1,
    )
    assert time_.sleeps == []


def test_a_non_retryable_failure_is_not_retried() -> None:
    time_ = FakeTime()
    attempt, timeouts = scripted(time_, [AUTH, "never"])
    err = failure_of(attempt, time_.hooks())
    assert (err.reason, err.retryable, err.http_status, err.attempts) == ("auth", False, 401, 1)
    assert len(timeouts) == 1


def test_retries_stop_at_max_retries_with_the_last_reason() -> None:
    time_ = FakeTime()
    attempt, timeouts = scripted(time_, [OVERLOADED] * 5)
    err = failure_of(attempt, time_.hooks())
    assert (err.reason, err.retryable, err.attempts) == ("overloaded", True, 3)
    assert len(timeouts) == 3
    assert err.elapsed_s == pytest.approx(1.5 + 3.0)
    assert (err.provider, err.model) == ("p", "m")


def test_max_retries_zero_makes_exactly_one_request() -> None:
    time_ = FakeTime()
    attempt, timeouts = scripted(time_, [OVERLOADED, "ok"])
    err = failure_of(attempt, time_.hooks(), RetryPolicy(max_retries=0))
    assert err.attempts == 1
    assert len(timeouts) == 1


def test_a_budget_ending_during_the_backoff_fails_without_sleeping_into_it() -> None:
    time_ = FakeTime()
    attempt, timeouts = scripted(time_, [RATE, "ok"], took_s=1.0)
    err = failure_of(attempt, time_.hooks(), RetryPolicy(timeout_s=2.0))
    assert (err.reason, err.retryable, err.attempts) == ("rate_limited", True, 1)
    assert "budget" in str(err)
    assert time_.sleeps == []
    assert len(timeouts) == 1


def test_a_budget_used_up_by_a_slow_attempt_ends_the_loop() -> None:
    time_ = FakeTime()
    attempt, timeouts = scripted(time_, [Failure("timeout", True), "ok"], took_s=5.0)
    err = failure_of(attempt, time_.hooks(), RetryPolicy(timeout_s=5.0))
    assert (err.reason, err.attempts) == ("timeout", 1)
    assert len(timeouts) == 1


def test_stop_requested_before_the_first_request_cancels_without_a_request() -> None:
    time_ = FakeTime()
    attempt, timeouts = scripted(time_, ["ok"])
    err = failure_of(attempt, time_.hooks(stop_requested=lambda: True))
    assert (err.reason, err.retryable, err.attempts) == ("cancelled", False, 0)
    assert timeouts == []


def test_stop_requested_during_a_sleep_cancels_within_a_slice() -> None:
    time_ = FakeTime()
    attempt, timeouts = scripted(time_, [RATE, "ok"])
    checks = iter([False, False, True])  # before the request, first slice, second slice
    err = failure_of(attempt, time_.hooks(stop_requested=lambda: next(checks)))
    assert (err.reason, err.attempts) == ("cancelled", 1)
    assert time_.sleeps == [0.5]
    assert isinstance(err.__cause__, Boom)
    assert len(timeouts) == 1


def test_a_stop_check_that_raises_is_taken_as_not_stopping() -> None:
    time_ = FakeTime()

    def broken() -> bool:
        raise RuntimeError("supervisor bug")

    attempt, _ = scripted(time_, [RATE, "ok"])
    assert run(attempt, time_.hooks(stop_requested=broken))[0] == "ok"


def test_on_retry_observers_see_each_retry_and_their_exceptions_are_swallowed() -> None:
    time_ = FakeTime()
    seen: list[RetryInfo] = []

    def explode(info: RetryInfo) -> None:
        raise RuntimeError("observer bug")

    attempt, _ = scripted(time_, [RATE, OVERLOADED, "ok"])
    value, attempts, _ = run(attempt, time_.hooks(on_retry=(explode, seen.append)))
    assert (value, attempts) == ("ok", 3)
    assert [(i.attempt, i.delay_s, i.failure.reason) for i in seen] == [
        (1, 1.5, "rate_limited"),
        (2, 3.0, "overloaded"),
    ]


def test_a_heartbeat_that_raises_does_not_fail_the_call() -> None:
    time_ = FakeTime()

    def bad_beat() -> None:
        raise RuntimeError("sink down")

    attempt, _ = scripted(time_, [RATE, "ok"])
    assert run(attempt, time_.hooks(heartbeat=bad_beat))[0] == "ok"


def test_a_classifier_that_raises_never_escapes_as_a_foreign_exception() -> None:
    time_ = FakeTime()

    def broken(err: BaseException) -> Failure:
        raise KeyError("classifier bug")

    def attempt(timeout_s: float) -> str:
        raise ValueError("odd")

    with pytest.raises(LLMGenerateError) as caught:
        call_with_retry(
            attempt, broken, policy=RetryPolicy(), hooks=time_.hooks(), provider="p", model="m"
        )
    assert caught.value.reason == "invalid_response"
    assert isinstance(caught.value.__cause__, ValueError)


def test_an_adapter_error_raised_inside_an_attempt_keeps_its_reason() -> None:
    time_ = FakeTime()

    def attempt(timeout_s: float) -> str:
        raise LLMGenerateError("not JSON", reason="invalid_response", http_status=200)

    err = failure_of(attempt, time_.hooks())
    assert (err.reason, err.http_status, err.attempts) == ("invalid_response", 200, 1)


def test_signals_that_are_not_exceptions_pass_through_untouched() -> None:
    time_ = FakeTime()

    def attempt(timeout_s: float) -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(attempt, time_.hooks())


def test_secrets_are_scrubbed_from_the_error_and_the_observed_failures() -> None:
    time_ = FakeTime()
    canary = "sk-ant-canary-0123456789"
    seen: list[RetryInfo] = []
    leaky = Failure("rate_limited", True, 429, message=f"bad key {canary}")
    attempt, _ = scripted(time_, [leaky, leaky, leaky])
    with pytest.raises(LLMGenerateError) as caught:
        call_with_retry(
            attempt,
            by_failure,
            policy=RetryPolicy(),
            hooks=time_.hooks(on_retry=(seen.append,)),
            provider="p",
            model="m",
            secrets=(canary,),
        )
    err = caught.value
    for text in (str(err), repr(err), pickle.dumps(err).decode("latin-1")):
        assert canary not in text
    assert all(canary not in info.failure.message for info in seen)
    assert pickle.loads(pickle.dumps(err)).attrs() == err.attrs()


# --- async parity --------------------------------------------------------------------------------


def test_async_retries_then_succeeds_with_the_same_rules() -> None:
    time_ = FakeTime()
    outcomes: list[Failure | str] = [Failure("rate_limited", True, 429, retry_after_s=2.0), "ok"]

    async def attempt(timeout_s: float) -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Failure):
            raise Boom(outcome)
        return outcome

    result = asyncio.run(
        acall_with_retry(
            attempt, by_failure, policy=RetryPolicy(), hooks=time_.hooks(), provider="p", model="m"
        )
    )
    value, attempts, elapsed = result
    assert (value, attempts) == ("ok", 2)
    assert elapsed == pytest.approx(2.0)
    assert time_.sleeps == [0.5, 0.5, 0.5, 0.5]


def test_async_stop_requested_during_a_sleep_cancels() -> None:
    time_ = FakeTime()
    checks = iter([False, True])

    async def attempt(timeout_s: float) -> str:
        raise Boom(RATE)

    with pytest.raises(LLMGenerateError) as caught:
        asyncio.run(
            acall_with_retry(
                attempt,
                by_failure,
                policy=RetryPolicy(),
                hooks=time_.hooks(stop_requested=lambda: next(checks)),
                provider="p",
                model="m",
            )
        )
    assert (caught.value.reason, caught.value.attempts) == ("cancelled", 1)
    assert time_.sleeps == []


# --- classify_http -------------------------------------------------------------------------------


def anthropic_error(kind: str, message: str = "x") -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


@pytest.mark.parametrize(
    ("status", "body", "reason", "retryable"),
    [
        (400, anthropic_error("invalid_request_error"), "invalid_request", False),
        (401, anthropic_error("authentication_error"), "auth", False),
        (403, anthropic_error("permission_error"), "permission", False),
        (404, anthropic_error("not_found_error"), "not_found", False),
        (408, None, "timeout", True),
        (409, None, "server_error", True),
        (413, anthropic_error("request_too_large"), "invalid_request", False),
        (422, None, "invalid_request", False),
        (429, anthropic_error("rate_limit_error"), "rate_limited", True),
        (500, anthropic_error("api_error"), "server_error", True),
        (502, "<html>bad gateway</html>", "server_error", True),
        (503, None, "server_error", True),
        (504, anthropic_error("timeout_error"), "timeout", True),
        (529, anthropic_error("overloaded_error"), "overloaded", True),
        (500, anthropic_error("overloaded_error"), "overloaded", True),
        (402, anthropic_error("billing_error"), "quota", False),
        (418, None, "invalid_request", False),
    ],
)
def test_statuses_and_error_types_classify_as_the_retry_rules_say(
    status: int, body: Any, reason: str, retryable: bool
) -> None:
    failure = classify_http(status, {}, body)
    assert (failure.reason, failure.retryable, failure.http_status) == (reason, retryable, status)


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"type": "insufficient_quota", "code": "insufficient_quota", "message": "m"}},
        {"error": {"message": "limit", "type": "requests", "code": "billing_hard_limit_reached"}},
        anthropic_error("rate_limit_error", "You have reached your specified API spend limit"),
        {"error_code": "spend_limit_exceeded", "message": "stop"},
    ],
)
def test_a_spend_limit_or_quota_429_is_quota_and_not_retried(body: Any) -> None:
    failure = classify_http(429, {"retry-after": "10"}, body)
    assert (failure.reason, failure.retryable) == ("quota", False)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, {"error": {"code": "context_length_exceeded", "message": "too long"}}),
        (400, anthropic_error("invalid_request_error", "prompt is too long: 250000 > 200000")),
        (413, anthropic_error("request_too_large", "exceeds the context window")),
    ],
)
def test_context_window_errors_are_recognised(status: int, body: Any) -> None:
    failure = classify_http(status, {}, body)
    assert (failure.reason, failure.retryable) == ("context_window", False)


def test_x_should_retry_overrides_the_status_either_way() -> None:
    assert not classify_http(500, {"x-should-retry": "false"}, None).retryable
    assert classify_http(400, {"X-Should-Retry": "true"}, None).retryable


def test_the_failure_carries_retry_after_and_a_short_message() -> None:
    failure = classify_http(429, {"retry-after": "7"}, anthropic_error("rate_limit_error", "slow"))
    assert failure.retry_after_s == 7.0
    assert failure.message == "HTTP 429 rate_limit_error: slow"


@settings(max_examples=150, deadline=None)
@given(
    st.integers(min_value=100, max_value=999),
    st.dictionaries(
        st.sampled_from(["retry-after", "retry-after-ms", "x-should-retry"]), st.text()
    ),
    st.recursive(
        st.none() | st.text() | st.integers(),
        lambda inner: st.dictionaries(st.text(max_size=10), inner, max_size=4),
        max_leaves=8,
    ),
)
def test_classify_http_never_raises_and_always_names_a_known_reason(
    status: int, headers: dict[str, str], body: Any
) -> None:
    failure = classify_http(status, headers, body)
    assert failure.reason in LLMGenerateError.REASONS


# --- parse_retry_after ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"Retry-After": "2"}, 2.0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, 10.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:27:00 GMT"}, 0.0),
        ({"retry-after": "tomorrow-ish"}, None),
        ({"retry-after": "-5"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": ""}, None),
        ({}, None),
    ],
)
def test_retry_after_forms_parse_or_are_ignored(
    headers: dict[str, str], expected: float | None
) -> None:
    assert parse_retry_after(headers, now=1445412480.0) == expected


@settings(max_examples=150, deadline=None)
@given(st.text(), st.text())
def test_parse_retry_after_never_raises(seconds: str, millis: str) -> None:
    value = parse_retry_after({"retry-after": seconds, "retry-after-ms": millis})
    assert value is None or value >= 0


# --- the deadline ---------------------------------------------------------------------------------


def test_an_async_attempt_that_never_answers_ends_at_the_deadline() -> None:
    """Whatever the attempt waits on, the budget ends it: cancelled, then ``timeout``."""
    import time

    cancelled: list[bool] = []

    async def attempt(timeout_s: float) -> str:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    async def main() -> LLMGenerateError:
        with pytest.raises(LLMGenerateError) as caught:
            await acall_with_retry(
                attempt,
                by_failure,
                policy=RetryPolicy(max_retries=2, timeout_s=0.2),
                hooks=RetryHooks(),
                provider="p",
                model="m",
            )
        return caught.value

    start = time.monotonic()
    err = asyncio.run(main())
    took = time.monotonic() - start
    assert err.reason == "timeout"
    assert err.retryable
    assert err.attempts == 1
    assert cancelled == [True]
    assert took < 5  # the deadline (0.2 s) with room for a loaded machine, not the 60 s wait


def test_a_sync_attempt_sees_its_deadline_and_a_nested_one_never_extends_it() -> None:
    import time

    from scriptorium.llm import deadline

    seen: list[float | None] = []

    def attempt(timeout_s: float) -> str:
        seen.append(deadline.left(None))
        with deadline.bounded(time.monotonic() + 100):
            seen.append(deadline.left(None))
        return "ok"

    assert deadline.left(5.0) == 5.0  # no deadline outside a call
    call_with_retry(
        attempt,
        by_failure,
        policy=RetryPolicy(timeout_s=2.0),
        hooks=RetryHooks(),
        provider="p",
        model="m",
    )
    first, nested = seen
    assert first is not None
    assert 0 < first <= 2.0
    assert nested is not None
    assert nested <= first
    assert deadline.when() is None
