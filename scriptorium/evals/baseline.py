"""``--baseline OLD.json``: a new report against an older one, case by case.

The rule: a case is a **regression** when the upper bound of its new 95 % Wilson interval is below
its old pass rate (:func:`scriptorium.evals.stats.is_regression`). The old rate is taken as what
the prompt used to do; the interval is how far the new rate could sit from the truth by the luck
of its repeats. A drop the interval covers (8/10 before, 7/10 now) is noise and not flagged; one
it does not (10/10 before, 3/10 now) is. A case that always passed before and fails any repeat
now is flagged: a rate of 1 leaves no room below it that luck explains. Cases are matched by
prompt, profile and name; a case in only one report is listed, never flagged, and a case with no
scored repeat on either side is never a regression (its judge errors are reported already).
"""

from __future__ import annotations

import os

from pydantic import ValidationError as PydanticValidationError

from scriptorium._files import FileProblem, read_named_file
from scriptorium._journal import TooDeep, load_json
from scriptorium._loading import describe_validation_error
from scriptorium.errors import InvalidRequestError
from scriptorium.evals.report import BaselineComparison, CaseComparison, TestReport
from scriptorium.evals.score import build_report, group_report
from scriptorium.evals.stats import is_regression

__all__ = ["MAX_BASELINE_BYTES", "compare", "read_baseline"]

#: The largest baseline report read.
MAX_BASELINE_BYTES = 256 << 20


def read_baseline(path: str | os.PathLike[str]) -> TestReport:
    """A report written by ``scriptorium test --json`` (or ``TestReport.model_dump_json()``),
    read the bounded way; ``InvalidRequestError`` (field ``baseline``) when it cannot be."""
    label = os.fspath(path)
    try:
        data = read_named_file(path, max_bytes=MAX_BASELINE_BYTES, label=label)
        # The one bounded JSON reader: nesting too deep to parse is TooDeep, never a raw
        # RecursionError.
        document = load_json(data.decode("utf-8"))
    except FileProblem as err:
        raise InvalidRequestError(f"--baseline: {err}", field="baseline") from err
    except TooDeep as err:
        raise InvalidRequestError(
            f"--baseline: {label} is not a JSON test report ({err})", field="baseline"
        ) from err
    except (UnicodeDecodeError, ValueError) as err:
        raise InvalidRequestError(
            f"--baseline: {label} is not a JSON test report ({type(err).__name__})",
            field="baseline",
        ) from err
    try:
        return TestReport.model_validate(document)
    except PydanticValidationError as err:
        raise InvalidRequestError(
            f"--baseline: {label} is not a test report: {describe_validation_error(err)}",
            field="baseline",
        ) from err


def _label(key: tuple[str, str, str]) -> str:
    prompt, profile, case = key
    return f"{prompt} [{profile}] {case}"


def _pairs(pairs: set[tuple[str, str]]) -> tuple[str, ...]:
    return tuple(f"{prompt} [{profile}]" for prompt, profile in sorted(pairs))


def compare(report: TestReport, baseline: TestReport, *, source: str | None = None) -> TestReport:
    """``report`` with every case compared against ``baseline``: regressions flagged on their
    case, the comparison attached, and ``ok`` false when any case regressed."""
    old = {case.key: case for case in baseline.all_cases()}
    compared: list[CaseComparison] = []
    groups = []
    for group in report.groups:
        cases = []
        for case in group.cases:
            before = old.get(case.key)
            if before is None:
                cases.append(case)
                continue
            regression = is_regression(before.pass_rate, case.passed, case.scored)
            compared.append(
                CaseComparison(
                    prompt=case.prompt,
                    profile=case.profile,
                    case=case.case,
                    old_pass_rate=before.pass_rate,
                    new_pass_rate=case.pass_rate,
                    new_interval=case.interval,
                    regression=regression,
                )
            )
            cases.append(case.model_copy(update={"regression": regression}))
        groups.append(group_report(group.prompt, group.profile, cases))
    now = {case.key for case in report.all_cases()}
    comparison = BaselineComparison(
        source=source,
        compared=tuple(compared),
        regressions=sum(c.regression for c in compared),
        new_cases=tuple(_label(key) for key in sorted(now - old.keys())),
        missing_cases=tuple(_label(key) for key in sorted(old.keys() - now)),
        unmatched=_pairs({k[:2] for k in now} - {k[:2] for k in old}),
        held=_pairs({k[:2] for k in old}) if ({k[:2] for k in now} - {k[:2] for k in old}) else (),
    )
    return build_report(
        groups,
        started_at=report.started_at,
        duration_ms=report.duration_ms,
        cassettes=report.cassettes,
        provider_batch=report.provider_batch,
        baseline=comparison,
    )
