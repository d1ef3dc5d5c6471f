"""The statistics functions against independent formulations, over generated outcome lists."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scriptorium.evals.stats import (
    is_regression,
    mcnemar_exact,
    paired_counts,
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


def _binomial_half(k: int, n: int) -> Fraction:
    return Fraction(math.comb(n, k), 2**n)


def _two_sided_by_likelihood(wins: int, losses: int) -> float:
    """The exact two-sided p-value as the sum of the probability of every outcome no more likely
    than the one seen (the definition; with p = 1/2 it is twice the smaller tail, at most 1)."""
    n = wins + losses
    seen = _binomial_half(wins, n)
    return float(sum(_binomial_half(k, n) for k in range(n + 1) if _binomial_half(k, n) <= seen))


@given(st.integers(min_value=0, max_value=120), st.integers(min_value=0, max_value=120))
def test_mcnemar_two_sided_is_the_exact_binomial_test(wins: int, losses: int) -> None:
    p = mcnemar_exact(wins, losses)
    assert p == pytest.approx(_two_sided_by_likelihood(wins, losses), rel=1e-12, abs=1e-300)
    assert p == mcnemar_exact(losses, wins)  # which side is which does not matter
    assert 0 < p <= 1


@given(st.integers(min_value=0, max_value=120), st.integers(min_value=0, max_value=120))
def test_mcnemar_one_sided_tails_add_up(wins: int, losses: int) -> None:
    n = wins + losses
    greater = mcnemar_exact(wins, losses, "greater")
    less = mcnemar_exact(wins, losses, "less")
    # Both tails hold the outcome seen: P(X >= w) + P(X <= w) = 1 + P(X = w).
    point = float(_binomial_half(wins, n)) if n else 1.0
    assert greater + less == pytest.approx(1 + point, rel=1e-12)
    assert greater == pytest.approx(mcnemar_exact(losses, wins, "less"), rel=1e-12)


@pytest.mark.parametrize(
    ("wins", "losses", "alternative", "expected"),
    [
        (0, 0, "two-sided", 1.0),
        (0, 5, "two-sided", 0.0625),  # five regressions alone are not enough at 0.05
        (0, 6, "two-sided", 0.03125),  # six are
        (1, 9, "two-sided", 0.021484375),
        (3, 3, "two-sided", 1.0),
        (5, 0, "greater", 0.03125),  # one-sided: five wins and no loss suffice
        (5, 0, "less", 1.0),
        (0, 5, "less", 0.03125),
    ],
)
def test_mcnemar_known_values(wins: int, losses: int, alternative: str, expected: float) -> None:
    assert mcnemar_exact(wins, losses, alternative) == expected  # type: ignore[arg-type]


def test_mcnemar_past_what_a_float_holds_stays_a_probability() -> None:
    assert 0 < mcnemar_exact(900, 1100) < 1e-4
    assert mcnemar_exact(1100, 1100) == 1.0


def test_mcnemar_refuses_what_is_not_a_count() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        mcnemar_exact(-1, 2)
    with pytest.raises(ValueError, match="alternative"):
        mcnemar_exact(1, 2, "sideways")  # type: ignore[arg-type]


def test_paired_counts_leave_unscored_pairs_out() -> None:
    pairs = [(True, True), (False, True), (True, False), (True, False), (None, True), (False, None)]
    counts = paired_counts(pairs)
    assert (counts.wins, counts.losses, counts.ties, counts.unscored) == (1, 2, 1, 2)
    assert counts.discordant == 3
