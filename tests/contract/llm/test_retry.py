"""The LLM client contract, part two: the retry rules, over every adapter that makes HTTP requests.

Retried: connection errors, timeouts, 408, 409, 429, 5xx and 529. Never retried: 400, 401, 403,
404, 413, 422. ``retry-after`` (``retry-after-ms`` first) is a lower bound on the wait; one past
the limit fails at once, still retryable, saying how long. ``attempts`` counts every HTTP request.
One wall-clock budget covers every attempt and every wait. Waits are recorded by the harness's
retry clock (jitter pinned to 1), so the first backoff is 1.5 s and the second 3 s, and no test
sleeps.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import LLMResponse
from scriptorium.profile.model import ExecutionSettings
from tests.contract.llm.harnesses import KEY, Harness


def failure(harness: Harness, **fields: object) -> LLMGenerateError:
    """The error one generation ends in."""
    with pytest.raises(LLMGenerateError) as caught:
        harness.run(lambda client: client.generate(harness.request(**fields)))
    return caught.value


def answer(harness: Harness, **fields: object) -> LLMResponse:
    response: LLMResponse = harness.run(lambda client: client.generate(harness.request(**fields)))
    return response


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
def test_retryable_statuses_are_retried(harness: Harness, status: int) -> None:
    """One failure, one backoff, then the answer: two requests, both counted."""
    harness.fail(status)
    harness.answer("after the retry", input_tokens=7, output_tokens=3)
    response = answer(harness)
    assert response.text == "after the retry"
    assert response.attempts == 2
    assert response.usage.llm_calls == 2
    assert (response.usage.input_tokens, response.usage.output_tokens) == (7, 3)
    assert harness.requests_made() == 2
    assert harness.clock.total == 1.5


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_client_errors_are_not_retried(harness: Harness, status: int) -> None:
    """A request the provider refuses is refused again if repeated: one request, no wait."""
    harness.fail(status)
    harness.answer("never sent")
    err = failure(harness)
    assert err.retryable is False
    assert err.http_status == status
    assert err.attempts == 1
    assert harness.requests_made() == 1
    assert harness.clock.slept == []
    assert KEY not in str(err)


@pytest.mark.parametrize(
    ("headers", "waited"),
    [
        ({"retry-after": "4"}, 4.0),
        ({"retry-after": "0.2"}, 1.5),  # a lower bound: the backoff is longer
        ({"retry-after-ms": "2500", "retry-after": "9"}, 2.5),  # the finer header wins
    ],
)
def test_retry_after_is_a_lower_bound_on_the_wait(
    harness: Harness, headers: dict[str, str], waited: float
) -> None:
    """The wait is the longer of the server's ``retry-after`` and the backoff."""
    harness.fail(429, headers=headers)
    harness.answer("waited")
    assert answer(harness).attempts == 2
    assert harness.clock.total == waited


def test_a_retry_after_past_the_limit_fails_at_once_as_retryable(harness: Harness) -> None:
    """An hour's ``retry-after`` is not slept through: the error says retryable, and when."""
    harness.fail(429, headers={"retry-after": "3600"})
    harness.answer("never sent")
    err = failure(harness)
    assert (err.reason, err.retryable, err.retry_after_s, err.attempts) == (
        "rate_limited",
        True,
        3600.0,
        1,
    )
    assert harness.clock.slept == []
    assert harness.requests_made() == 1


def test_attempts_count_every_http_request(harness: Harness) -> None:
    """A 5xx, a reset and a 529 use up the default two retries: three requests, three attempts,
    and the last failure's reason."""
    harness.fail(500)
    harness.reset_connection()
    harness.fail(529)
    harness.answer("never sent")
    err = failure(harness)
    assert (err.reason, err.retryable, err.attempts) == ("overloaded", True, 3)
    assert harness.requests_made() == 3
    assert harness.clock.total == 1.5 + 3.0


def test_an_answer_after_failures_counts_them_all(harness: Harness) -> None:
    """Two failed requests and a good one: three attempts, three calls, the good one's tokens."""
    harness.fail(503)
    harness.reset_connection()
    harness.answer("third time", input_tokens=11, output_tokens=2)
    response = answer(harness)
    assert (response.text, response.attempts, response.usage.llm_calls) == ("third time", 3, 3)
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 2)


def test_max_retries_zero_makes_one_request(harness: Harness) -> None:
    """A profile without retries fails on the first retryable error."""
    harness.fail(500)
    harness.answer("never sent")
    err = failure(harness, settings=ExecutionSettings(max_retries=0))
    assert (err.reason, err.retryable, err.attempts) == ("server_error", True, 1)
    assert harness.requests_made() == 1


def test_a_refused_connection_is_retried_and_then_a_connection_failure(harness: Harness) -> None:
    """Nothing listening: retried like any connection error, then ``connection``."""
    harness.refuse_connections()
    err = failure(harness)
    assert (err.reason, err.retryable, err.attempts) == ("connection", True, 3)
    assert KEY not in str(err)


def test_the_budget_covers_attempts_and_waits(harness: Harness) -> None:
    """With 4 s of budget, a 1.5 s wait fits and a 3 s one would not: the call ends after two
    requests, without sleeping into the budget, naming it."""
    harness.fail(529)
    harness.fail(529)
    harness.answer("too late")
    err = failure(harness, settings=ExecutionSettings(timeout_s=4.0))
    assert (err.reason, err.retryable, err.attempts) == ("overloaded", True, 2)
    assert "budget" in str(err)
    assert harness.clock.total == 1.5
    assert harness.requests_made() == 2


def test_a_slow_answer_hits_the_timeout_taken_from_the_budget(harness: Harness) -> None:
    """The request gets what is left of the budget as its timeout: a slow server is a timeout
    failure in about that time, not after the server's delay. (One answered call with the same
    settings first: the SDK's import on first use, a second or more, and the building of a client
    for these settings, boto3's a tenth of a second or more under load, are no part of a
    request's time.)"""
    settings = ExecutionSettings(timeout_s=0.3)
    harness.answer("warm")
    answer(harness, settings=settings)
    harness.slow(1.0)
    started = time.perf_counter()
    err = failure(harness, settings=settings)
    assert time.perf_counter() - started < 0.9
    assert (err.reason, err.retryable, err.attempts) == ("timeout", True, 1)


def test_async_calls_follow_the_same_rules(harness: Harness) -> None:
    """``agenerate`` retries, waits and counts as ``generate`` does."""
    harness.fail(429, headers={"retry-after": "2"})
    harness.answer("async")
    response = harness.run(lambda client: asyncio.run(client.agenerate(harness.request())))
    assert (response.text, response.attempts, response.usage.llm_calls) == ("async", 2, 2)
    assert harness.clock.total == 2.0
    harness.fail(401)
    with pytest.raises(LLMGenerateError) as caught:
        harness.run(lambda client: asyncio.run(client.agenerate(harness.request())))
    assert (caught.value.reason, caught.value.attempts) == ("auth", 1)
