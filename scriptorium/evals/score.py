"""From repeat outcomes to the report: each case's figures, each prompt-and-profile group's, and
the totals. Pure functions over the outcomes (the statistics are :mod:`scriptorium.evals.stats`).
"""

from __future__ import annotations

from collections.abc import Sequence

from scriptorium.evals.report import (
    CaseReport,
    GroupReport,
    Interval,
    RepeatOutcome,
    TestReport,
)
from scriptorium.evals.stats import pass_at_k, pass_hat_k, pass_rate, percentile, wilson_interval

__all__ = ["build_report", "case_report", "group_report", "interval"]


def interval(passed: int, scored: int) -> Interval | None:
    """The Wilson 95 % interval as the report holds it."""
    bounds = wilson_interval(passed, scored)
    return None if bounds is None else Interval(low=bounds[0], high=bounds[1])


def _latencies(outcomes: Sequence[RepeatOutcome]) -> list[float]:
    return [o.latency_ms for o in outcomes if o.latency_ms is not None]


def case_report(
    prompt: str,
    profile: str,
    case: str,
    min_pass_rate: float,
    outcomes: Sequence[RepeatOutcome],
) -> CaseReport:
    """One case on one profile over its repeats (see :class:`CaseReport` for the rules)."""
    passed = sum(o.status == "passed" for o in outcomes)
    failed = sum(o.status == "failed" for o in outcomes)
    judge_errors = sum(o.status == "judge_error" for o in outcomes)
    scored = passed + failed
    rate = pass_rate(passed, scored)
    if rate is None:
        status = "error" if judge_errors else "failed"
    elif rate < min_pass_rate:
        status = "failed"
    else:
        status = "error" if judge_errors else "passed"
    latencies = _latencies(outcomes)
    scores = [o.score for o in outcomes]
    return CaseReport(
        prompt=prompt,
        profile=profile,
        case=case,
        status=status,
        repeats=len(outcomes),
        passed=passed,
        failed=failed,
        judge_errors=judge_errors,
        scored=scored,
        min_pass_rate=min_pass_rate,
        pass_rate=rate,
        interval=interval(passed, scored),
        pass_hat_k=pass_hat_k(scores),
        pass_at_k=pass_at_k(scores),
        cost_micro=sum(o.cost_micro for o in outcomes),
        gateway_cost_micro=sum(o.gateway_cost_micro for o in outcomes),
        judge_cost_micro=sum(o.judge.cost_micro for o in outcomes if o.judge is not None),
        latency_p50_ms=percentile(latencies, 50),
        latency_p95_ms=percentile(latencies, 95),
        outcomes=tuple(outcomes),
    )


def group_report(prompt: str, profile: str, cases: Sequence[CaseReport]) -> GroupReport:
    """One prompt on one profile: its cases' repeats pooled (see :class:`GroupReport`)."""
    passed = sum(c.passed for c in cases)
    failed = sum(c.failed for c in cases)
    all_passed = [c.pass_hat_k for c in cases if c.pass_hat_k is not None]
    any_passed = [c.pass_at_k for c in cases if c.pass_at_k is not None]
    latencies = [ms for c in cases for ms in _latencies(c.outcomes)]
    return GroupReport(
        prompt=prompt,
        profile=profile,
        cases=tuple(cases),
        cases_passed=sum(c.status == "passed" for c in cases),
        cases_failed=sum(c.status == "failed" for c in cases),
        cases_errored=sum(c.status == "error" for c in cases),
        repeats=sum(c.repeats for c in cases),
        passed=passed,
        failed=failed,
        judge_errors=sum(c.judge_errors for c in cases),
        scored=passed + failed,
        pass_rate=pass_rate(passed, passed + failed),
        interval=interval(passed, passed + failed),
        pass_hat_k=pass_rate(sum(all_passed), len(all_passed)),
        pass_hat_k_of=len(all_passed),
        pass_at_k=pass_rate(sum(any_passed), len(any_passed)),
        pass_at_k_of=len(any_passed),
        cost_micro=sum(c.cost_micro for c in cases),
        gateway_cost_micro=sum(c.gateway_cost_micro for c in cases),
        judge_cost_micro=sum(c.judge_cost_micro for c in cases),
        latency_p50_ms=percentile(latencies, 50),
        latency_p95_ms=percentile(latencies, 95),
    )


def build_report(groups: Sequence[GroupReport], **fields: object) -> TestReport:
    """The report over ``groups``: totals, and ``ok`` when every case passed. ``fields`` sets
    the rest (``duration_ms``, ``cassettes``, ``provider_batch``, ``baseline``)."""
    cases = [c for g in groups for c in g.cases]
    regressions = sum(c.regression for c in cases)
    failed = sum(c.status == "failed" for c in cases)
    errored = sum(c.status == "error" for c in cases)
    return TestReport.model_validate(
        {
            "groups": tuple(groups),
            "cases": len(cases),
            "cases_passed": sum(c.status == "passed" for c in cases),
            "cases_failed": failed,
            "cases_errored": errored,
            "repeats": sum(c.repeats for c in cases),
            "judge_errors": sum(c.judge_errors for c in cases),
            "cost_micro": sum(c.cost_micro for c in cases),
            "gateway_cost_micro": sum(c.gateway_cost_micro for c in cases),
            "judge_cost_micro": sum(c.judge_cost_micro for c in cases),
            "ok": failed == 0 and errored == 0 and regressions == 0,
            **fields,
        }
    )
