"""The rate budget every executor shares: a sliding window that never grants more than the
per-minute budget scaled to the window, waits that are honest, settling, pauses, and no deadlock."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.limits.budget import Estimate, RateBudget
from scriptorium.limits.limiter import Stopped
from scriptorium.limits.local import LocalLimiter
from scriptorium.profile.model import RateLimits
from tests.executor_support import most_in_any_window


def _drive(budget: RateBudget, asks: list[tuple[float, Estimate]]) -> list[tuple[float, Estimate]]:
    """Each ask keeps asking from its time on, waiting what it is told (one worker per ask, all
    sharing the budget, taken in time order); returns when each was granted."""
    granted: list[tuple[float, Estimate]] = []
    queue = sorted(asks, key=lambda a: a[0])
    while queue:
        queue.sort(key=lambda a: a[0])
        now, need = queue.pop(0)
        wait, ticket = budget.acquire(now, need)
        if ticket >= 0:
            assert wait == 0
            granted.append((now, need))
        else:
            assert wait > 0
            queue.append((now + wait, need))
    return granted


@settings(max_examples=60, deadline=None)
@given(
    rpm=st.integers(1, 600),
    window_s=st.sampled_from([1.0, 2.0, 60.0]),
    times=st.lists(st.floats(0, 300, allow_nan=False), min_size=1, max_size=60),
)
def test_no_window_ever_holds_more_requests_than_the_budget(
    rpm: int, window_s: float, times: list[float]
) -> None:
    limits = RateLimits(requests_per_minute=rpm)
    capacity = int(rpm * window_s / 60)
    if capacity < 1:
        with pytest.raises(ValueError, match="no whole request"):
            RateBudget(limits, window_s=window_s)
        return
    # A microsecond of margin: grants exactly one window apart are not an artefact of rounding.
    budget = RateBudget(limits, window_s=window_s, margin_s=1e-6)
    granted = _drive(budget, [(t, Estimate(10, 10)) for t in times])
    assert len(granted) == len(times)  # every ask is granted eventually
    assert most_in_any_window([t for t, _ in granted], window_s) <= capacity


@settings(max_examples=60, deadline=None)
@given(
    tpm=st.integers(100, 5_000),
    sizes=st.lists(st.integers(1, 3_000), min_size=1, max_size=30),
)
def test_token_budgets_hold_and_an_oversized_request_still_runs(tpm: int, sizes: list[int]) -> None:
    """Input tokens in any window stay within the budget, except a single request larger than
    the whole budget, which runs alone in an empty window instead of waiting forever."""
    window_s = 60.0
    budget = RateBudget(RateLimits(input_tokens_per_minute=tpm), window_s=window_s, margin_s=0)
    granted = _drive(budget, [(0.0, Estimate(n, 1)) for n in sizes])
    assert sorted(n.input_tokens for _, n in granted) == sorted(sizes)
    for start, _ in granted:
        inside = [n.input_tokens for t, n in granted if start <= t < start + window_s]
        assert sum(inside) <= tpm or len(inside) == 1


def test_a_grant_counts_for_the_window_plus_the_margin() -> None:
    budget = RateBudget(RateLimits(requests_per_minute=60), window_s=1.0, margin_s=0.25)
    assert budget.acquire(10.0, Estimate(1, 1)) == (0.0, 0)
    wait, ticket = budget.acquire(10.5, Estimate(1, 1))
    assert ticket == -1
    assert wait == pytest.approx(0.75)
    assert budget.acquire(11.25, Estimate(1, 1))[1] == 1


def test_settling_replaces_the_estimate_with_real_usage() -> None:
    """``max_tokens`` is a pessimistic estimate; settling with what was used frees the rest."""
    budget = RateBudget(RateLimits(output_tokens_per_minute=1_000), margin_s=0)
    _, first = budget.acquire(0.0, Estimate(input_tokens=5, output_tokens=800))
    assert budget.acquire(1.0, Estimate(input_tokens=5, output_tokens=800))[1] == -1
    budget.settle(first, Estimate(input_tokens=5, output_tokens=40))
    assert budget.acquire(1.0, Estimate(input_tokens=5, output_tokens=800))[1] >= 0
    assert budget.in_window(1.0).output_tokens == 840


def test_a_pause_holds_every_grant_until_it_ends() -> None:
    budget = RateBudget(RateLimits(requests_per_minute=1_000))
    budget.pause(5.0, 3.0)
    assert budget.acquire(6.0, Estimate(1, 1)) == (2.0, -1)
    assert budget.acquire(8.0, Estimate(1, 1))[1] >= 0


def test_a_retry_is_granted_for_when_it_will_be_sent() -> None:
    budget = RateBudget(RateLimits(requests_per_minute=60), window_s=1.0, margin_s=0)
    assert budget.acquire(0.0, Estimate(1, 1), delay_s=5.0)[1] >= 0
    # The grant lives from t=5 to t=6: at t=5.5 it still counts.
    assert budget.acquire(5.5, Estimate(1, 1))[1] == -1
    assert budget.acquire(6.0, Estimate(1, 1))[1] >= 0


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_the_local_limiter_sleeps_until_granted_and_ignores_unlimited_profiles() -> None:
    clock = _Clock()
    limiter = LocalLimiter(
        {"slow": RateLimits(requests_per_minute=2)}, clock=clock, sleep=clock.sleep
    )
    assert limiter.acquire("fast", Estimate(1, 1)) == -1  # no limits: never waits
    limiter.acquire("slow", Estimate(1, 1))
    limiter.acquire("slow", Estimate(1, 1))
    limiter.acquire("slow", Estimate(1, 1))
    assert clock.now >= 60.0
    assert not clock.slept or max(clock.slept) <= 0.5  # waits in slices, to notice a stop


def test_a_closed_local_limiter_grants_nothing_more() -> None:
    limiter = LocalLimiter({"p": RateLimits(requests_per_minute=5)})
    limiter.close()
    with pytest.raises(Stopped):
        limiter.acquire("p", Estimate(1, 1))
