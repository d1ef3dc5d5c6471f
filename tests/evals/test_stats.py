"""The statistics functions against independent formulations, over generated outcome lists."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scriptorium.evals.stats import (
    is_regression,
    pass_at_k,
    pass_hat_k,
    pass_rate,
    percentile,
    wilson_interval,
)

Z = 1.959963984540054
outcome_lists = st.lists(st.sampled_from([True, False, None]), max_size=40)


def _wilson_by_roots(k: int, n: int) -> tuple[float, float]:
    """The Wilson interval as the two roots of (p - k/n)^2 = z^2 p (1 - p) / n in p."""
    phat = k / n
    a = 1 + Z * Z / n
    b = -(2 * phat + Z * Z / n)
    c = phat * phat
    root = math.sqrt(max(0.0, b * b - 4 * a * c))
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


@given(st.integers(min_value=1, max_value=2000), st.data())
def test_the_wilson_interval_is_the_score_test_inversion(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(min_value=0, max_value=n))
    interval = wilson_interval(k, n)
    assert interval is not None
    low, high = _wilson_by_roots(k, n)
    assert interval[0] == pytest.approx(max(0.0, low), abs=1e-9)
    assert interval[1] == pytest.approx(min(1.0, high), abs=1e-9)
    assert 0.0 <= interval[0] <= k / n <= interval[1] <= 1.0


def test_known_wilson_values() -> None:
    assert wilson_interval(0, 0) is None
    low, high = wilson_interval(1, 1) or (0.0, 0.0)
    assert (round(low, 4), high) == (0.2065, 1.0)
    low, high = wilson_interval(8, 10) or (0.0, 0.0)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)


@given(outcome_lists)
def test_pass_rates_leave_out_the_unscored(outcomes: list[bool | None]) -> None:
    passed = outcomes.count(True)
    scored = passed + outcomes.count(False)
    rate = pass_rate(passed, scored)
    if scored == 0:
        assert rate is None
    else:
        assert Fraction(rate or 0.0).limit_denominator(10_000) == Fraction(passed, scored)


@given(outcome_lists)
def test_pass_hat_k_is_every_repeat_passed(outcomes: list[bool | None]) -> None:
    verdict = pass_hat_k(outcomes)
    if not outcomes:
        assert verdict is None
    elif False in outcomes:
        assert verdict is False
    elif None in outcomes:
        assert verdict is None  # every scored one passed; an unscored one could still fail
    else:
        assert verdict is True
        assert all(outcomes)


@given(outcome_lists)
def test_pass_at_k_is_some_repeat_passed(outcomes: list[bool | None]) -> None:
    verdict = pass_at_k(outcomes)
    if True in outcomes:
        assert verdict is True
    elif not outcomes or None in outcomes:
        assert verdict is None
    else:
        assert verdict is False


@given(
    st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1, max_size=60),
    st.sampled_from([50, 95, 99, 100, 1]),
)
def test_percentiles_are_by_nearest_rank(values: list[float], q: int) -> None:
    found = percentile(values, q)
    assert found in values
    ordered = sorted(values)
    # Nearest rank: at least q % of the values are at or below it, and fewer below it.
    at_or_below = sum(v <= (found or 0.0) for v in ordered)
    below = sum(v < (found or 0.0) for v in ordered)
    assert at_or_below * 100 >= q * len(ordered)
    assert below * 100 < q * len(ordered)


def test_percentile_edges() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0
    assert percentile(list(map(float, range(1, 21))), 95) == 19.0
    with pytest.raises(ValueError, match="q"):
        percentile([1.0], 0)


@given(st.integers(min_value=1, max_value=200), st.data())
def test_a_regression_is_a_new_upper_bound_below_the_old_rate(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(min_value=0, max_value=n))
    old = data.draw(st.floats(min_value=0, max_value=1))
    _, high = _wilson_by_roots(k, n)
    if abs(min(1.0, high) - old) > 1e-9:
        assert is_regression(old, k, n) is (min(1.0, high) < old)
    assert is_regression(None, k, n) is False
    assert is_regression(old, 0, 0) is False


def test_counts_are_checked() -> None:
    with pytest.raises(ValueError, match="passed"):
        pass_rate(3, 2)
    with pytest.raises(ValueError, match="passed"):
        wilson_interval(-1, 2)
