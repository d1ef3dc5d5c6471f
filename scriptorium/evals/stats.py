"""The statistics of a test report, as pure functions over counts and lists.

A repeat is passed, failed, or unscored (its judge gave no verdict). Unscored repeats are never
counted as either: every rate here is over the repeats (or cases) whose answer is known, and the
callers report how many were left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "Z_95",
    "Alternative",
    "PairedCounts",
    "is_regression",
    "mcnemar_exact",
    "paired_counts",
    "pass_at_k",
    "pass_hat_k",
    "pass_rate",
    "percentile",
    "wilson_interval",
]

#: The standard normal quantile for a two-sided 95 % interval.
Z_95 = 1.959963984540054


def pass_rate(passed: int, scored: int) -> float | None:
    """``passed / scored``; None when nothing was scored (a rate of no answers is not 0)."""
    _counts(passed, scored)
    return None if scored == 0 else passed / scored


def wilson_interval(passed: int, scored: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of a pass rate (95 % by default); None when nothing was scored.

    With ``p = passed / n``: centre ``(p + z²/2n) / (1 + z²/n)``, half-width
    ``z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n)``. Unlike ``p ± z·sqrt(p(1-p)/n)`` it stays inside
    [0, 1] and does not collapse to a point at 0/n or n/n, which matters at the handful of repeats
    a prompt test runs.
    """
    _counts(passed, scored)
    if scored == 0:
        return None
    n = scored
    p = passed / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # Rounding can leave the bounds a hair outside [0, 1] or past p at the edges.
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def pass_hat_k(outcomes: Iterable[bool | None]) -> bool | None:
    """pass^k: whether every one of the k repeats passed. ``None`` marks an unscored repeat; the
    answer is None when it could change it (no failure seen, some repeat unscored), and when there
    are no repeats at all."""
    seen = list(outcomes)
    if not seen:
        return None
    if any(outcome is False for outcome in seen):
        return False
    return None if any(outcome is None for outcome in seen) else True


def pass_at_k(outcomes: Iterable[bool | None]) -> bool | None:
    """pass@k: whether at least one of the k repeats passed; None when no repeat passed and some
    are unscored (or there are none)."""
    seen = list(outcomes)
    if any(outcome is True for outcome in seen):
        return True
    if not seen or any(outcome is None for outcome in seen):
        return None
    return False


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0 < q <= 100) by the nearest-rank method: the smallest value with
    at least ``q`` % of the values at or below it, i.e. ``sorted(values)[ceil(q/100 * n) - 1]``.
    Always a value that was measured (no interpolation); None for no values."""
    if not 0 < q <= 100:
        raise ValueError("q must be in (0, 100]")
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def is_regression(old_rate: float | None, passed: int, scored: int, z: float = Z_95) -> bool:
    """Whether a case regressed against its baseline: the upper bound of the new pass rate's
    Wilson interval is below the old pass rate. The new rate is then lower than the old one by
    more than its own sampling noise explains; a drop within the interval is not flagged. Nothing
    is a regression when either side has no scored repeat."""
    interval = wilson_interval(passed, scored, z)
    if old_rate is None or interval is None:
        return False
    return interval[1] < old_rate


def _counts(passed: int, scored: int) -> None:
    if scored < 0 or passed < 0 or passed > scored:
        raise ValueError("expected 0 <= passed <= scored")


#: Which way a paired test looks: ``two-sided`` (the candidate differs from the reference),
#: ``greater`` (the candidate passes more often), ``less`` (it passes less often).
Alternative = Literal["two-sided", "greater", "less"]


@dataclass(frozen=True)
class PairedCounts:
    """Case-and-repeat pairs run on a reference and a candidate, by what came of each side:
    ``wins`` failed before and passed after, ``losses`` passed before and failed after,
    ``ties`` the same on both sides; ``unscored`` pairs (either side without a verdict) are left
    out of the other three."""

    wins: int = 0
    losses: int = 0
    ties: int = 0
    unscored: int = 0

    @property
    def discordant(self) -> int:
        """The pairs whose outcomes differ: all an exact paired test looks at."""
        return self.wins + self.losses


def paired_counts(pairs: Iterable[tuple[bool | None, bool | None]]) -> PairedCounts:
    """Count ``(before, after)`` outcome pairs (True passed, False failed, None unscored)."""
    wins = losses = ties = unscored = 0
    for before, after in pairs:
        if before is None or after is None:
            unscored += 1
        elif before == after:
            ties += 1
        elif after:
            wins += 1
        else:
            losses += 1
    return PairedCounts(wins=wins, losses=losses, ties=ties, unscored=unscored)


def mcnemar_exact(wins: int, losses: int, alternative: Alternative = "two-sided") -> float:
    """The exact McNemar test of paired pass/fail outcomes: the p-value of ``wins`` pairs that
    only the candidate passed against ``losses`` that only the reference passed, when either
    side of a discordant pair is as likely as the other (``wins ~ Binomial(wins + losses, 1/2)``).
    Concordant pairs carry no evidence either way and are not an argument.

    ``two-sided``: ``min(1, 2·P(X <= min(wins, losses)))``, the candidate differs;
    ``greater``: ``P(X >= wins)``, it passes more often (what an optimiser accepting a candidate
    asks); ``less``: ``P(X <= wins)``, it passes less often. No discordant pair is p = 1. The sums
    are exact (integers) until the one division."""
    if wins < 0 or losses < 0:
        raise ValueError("expected counts >= 0")
    n = wins + losses
    if n == 0:
        return 1.0
    if alternative == "greater":
        tail = sum(math.comb(n, k) for k in range(wins, n + 1))
    elif alternative == "less":
        tail = sum(math.comb(n, k) for k in range(0, wins + 1))
    elif alternative == "two-sided":
        tail = min(2 * sum(math.comb(n, k) for k in range(0, min(wins, losses) + 1)), 2**n)
    else:
        raise ValueError(f"unknown alternative {alternative!r}")
    return _ratio(tail, n)


def _ratio(tail: int, n: int) -> float:
    """``tail / 2**n`` as a float, also when ``2**n`` is past what a float holds."""
    from fractions import Fraction

    return float(Fraction(tail, 2**n))
