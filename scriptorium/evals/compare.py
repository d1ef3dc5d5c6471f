"""A candidate against a reference version (``scriptorium test --against REF``): per case what
changed, overall whether the candidate is worse beyond chance.

Cases are matched by prompt, profile and name; repeats by their number. A case is ``fixed`` when
it meets its pass rate after and did not before, ``regressed`` the other way, else ``same``. The
overall verdict is the exact McNemar test (``stats.mcnemar_exact``, two-sided) over the pairs of
one case's repeat on both sides whose outcomes differ: ``worse`` when more pairs regressed than
were fixed and ``p < 0.05``. ``ok`` is not worse and no ``must_pass`` case regressed.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from scriptorium.evals.report import (
    CaseChange,
    CaseReport,
    OutputDiff,
    RepeatOutcome,
    TestReport,
    VersionComparison,
)
from scriptorium.evals.stats import PairedCounts, mcnemar_exact, paired_counts, percentile

__all__ = [
    "ALPHA",
    "case_change",
    "compare_versions",
    "output_diff",
    "paired_verdict",
    "repeat_pairs",
    "value_diff",
]

#: The level below which a difference is more than chance.
ALPHA = 0.05
_MAX_DIFF_LINES = 200


def compare_versions(
    after: TestReport, before: TestReport, *, against: str, revision: str | None = None
) -> TestReport:
    """``after`` (the candidate's report) with its ``comparison`` against ``before`` (the
    reference's, same plan) and ``ok`` set to the comparison's verdict."""
    old = {case.key: case for case in before.all_cases()}
    changes: list[CaseChange] = []
    new_cases: list[str] = []
    pairs: list[tuple[bool | None, bool | None]] = []
    for case in after.all_cases():
        previous = old.get(case.key)
        if previous is None:
            new_cases.append(f"{case.prompt} [{case.profile}] {case.case}")
            continue
        changes.append(case_change(previous, case))
        pairs.extend(_pairs(previous.outcomes, case.outcomes))
    counts, p_value, worse = paired_verdict(pairs)
    must = tuple(
        f"{c.prompt} [{c.profile}] {c.case}"
        for c in changes
        if c.must_pass and c.change == "regressed"
    )
    shared = {(c.prompt, c.profile, c.case) for c in changes}
    before_cases = [c for c in before.all_cases() if c.key in shared]
    after_cases = [c for c in after.all_cases() if c.key in shared]
    comparison = VersionComparison(
        against=against,
        revision=revision,
        cases=tuple(changes),
        fixed=sum(c.change == "fixed" for c in changes),
        regressed=sum(c.change == "regressed" for c in changes),
        same=sum(c.change == "same" for c in changes),
        new_cases=tuple(new_cases),
        passed_before=sum(c.passed for c in before_cases),
        passed_after=sum(c.passed for c in after_cases),
        scored_before=sum(c.scored for c in before_cases),
        scored_after=sum(c.scored for c in after_cases),
        cases_passed_before=sum(c.status == "passed" for c in before_cases),
        cases_passed_after=sum(c.status == "passed" for c in after_cases),
        cost_micro_before=sum(c.cost_micro for c in before_cases),
        cost_micro_after=sum(c.cost_micro for c in after_cases),
        latency_p50_ms_before=_p50(before_cases),
        latency_p50_ms_after=_p50(after_cases),
        pairs=counts.discordant + counts.ties,
        fixed_pairs=counts.wins,
        regressed_pairs=counts.losses,
        unscored_pairs=counts.unscored,
        p_value=p_value,
        alpha=ALPHA,
        worse=worse,
        must_pass_regressed=must,
        ok=not worse and not must,
        before=before,
    )
    return after.model_copy(update={"comparison": comparison, "ok": comparison.ok})


def paired_verdict(
    pairs: Iterable[tuple[bool | None, bool | None]],
) -> tuple[PairedCounts, float, bool]:
    """The ``(before, after)`` repeat outcomes counted, the two-sided exact McNemar p-value, and
    whether the candidate is worse: more pairs regressed than fixed, with ``p < ALPHA``."""
    counts = paired_counts(pairs)
    p_value = mcnemar_exact(counts.wins, counts.losses)
    return counts, p_value, counts.losses > counts.wins and p_value < ALPHA


def repeat_pairs(
    before: Iterable[CaseReport], after: Iterable[CaseReport]
) -> Iterator[tuple[bool | None, bool | None]]:
    """The outcome of each repeat of each case on both sides (matched by prompt, profile, case
    and repeat number); a case or repeat on one side only gives no pair."""
    old = {case.key: case for case in before}
    for case in after:
        previous = old.get(case.key)
        if previous is not None:
            yield from _pairs(previous.outcomes, case.outcomes)


def _pairs(
    before: Sequence[RepeatOutcome], after: Sequence[RepeatOutcome]
) -> Iterator[tuple[bool | None, bool | None]]:
    old = {o.repeat: o for o in before}
    for outcome in after:
        previous = old.get(outcome.repeat)
        if previous is not None:
            yield previous.score, outcome.score


def _p50(cases: Sequence[CaseReport]) -> float | None:
    return percentile(
        [o.latency_ms for c in cases for o in c.outcomes if o.latency_ms is not None], 50
    )


def case_change(before: CaseReport, after: CaseReport) -> CaseChange:
    """One case on both sides: its figures, its change, and for a changed case how its output
    changed."""
    was, now = before.status == "passed", after.status == "passed"
    change = "fixed" if now and not was else "regressed" if was and not now else "same"
    return CaseChange(
        prompt=after.prompt,
        profile=after.profile,
        case=after.case,
        change=change,
        must_pass=after.must_pass,
        before_status=before.status,
        after_status=after.status,
        before_passed=before.passed,
        before_scored=before.scored,
        after_passed=after.passed,
        after_scored=after.scored,
        before_pass_rate=before.pass_rate,
        after_pass_rate=after.pass_rate,
        before_interval=before.interval,
        after_interval=after.interval,
        diff=None if change == "same" else output_diff(before.outcomes, after.outcomes),
    )


def output_diff(
    before: Sequence[RepeatOutcome], after: Sequence[RepeatOutcome]
) -> OutputDiff | None:
    """The outputs of the first repeat whose outcome changed (else the first on both sides),
    diffed: by JSON Pointer when both parsed as JSON, as text otherwise. None when neither side
    has an output (both runs failed)."""
    old = {o.repeat: o for o in before}
    matched = [(old[o.repeat], o) for o in after if o.repeat in old]
    if not matched:
        return None
    first, second = next(((a, b) for a, b in matched if a.score != b.score), matched[0])
    if first.output is None and second.output is None:
        return None
    if first.value is not None and second.value is not None:
        return OutputDiff(
            kind="value",
            repeat=second.repeat,
            before=first.value,
            after=second.value,
            lines=tuple(_capped(value_diff(first.value, second.value))),
        )
    lines = difflib.unified_diff(
        (first.output or "").splitlines(),
        (second.output or "").splitlines(),
        "before",
        "after",
        lineterm="",
    )
    return OutputDiff(
        kind="text",
        repeat=second.repeat,
        before=first.output,
        after=second.output,
        lines=tuple(_capped(lines)),
    )


def _capped(lines: Iterator[str] | list[str]) -> list[str]:
    kept = []
    for count, line in enumerate(lines):
        if count == _MAX_DIFF_LINES:
            kept.append("... (more lines left out)")
            break
        kept.append(line)
    return kept


def _token(key: str | int) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def value_diff(before: Any, after: Any, pointer: str = "") -> Iterator[str]:
    """Where two JSON values differ, one line per JSON Pointer: ``~ /p: old -> new`` for a value
    that changed, ``- /p: old`` for one only before, ``+ /p: new`` for one only after. Objects
    are compared key by key, arrays item by item; ``1`` and ``1.0`` are the same, ``true`` and
    ``1`` are not."""
    from scriptorium.evals.expect import json_equal

    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(before.keys() | after.keys()):
            where = f"{pointer}/{_token(key)}"
            if key not in after:
                yield f"- {where}: {_shown(before[key])}"
            elif key not in before:
                yield f"+ {where}: {_shown(after[key])}"
            else:
                yield from value_diff(before[key], after[key], where)
        return
    if isinstance(before, list) and isinstance(after, list):
        for index in range(max(len(before), len(after))):
            where = f"{pointer}/{index}"
            if index >= len(after):
                yield f"- {where}: {_shown(before[index])}"
            elif index >= len(before):
                yield f"+ {where}: {_shown(after[index])}"
            else:
                yield from value_diff(before[index], after[index], where)
        return
    if not json_equal(before, after):
        where = pointer or "''"
        yield f"~ {where}: {_shown(before)} -> {_shown(after)}"
