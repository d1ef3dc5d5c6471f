"""The report of a test run (``scriptorium test``, ``Engine.test``): per prompt and profile, per
case, per repeat. Frozen pydantic models; ``TestReport.model_dump_json()`` is the ``--json`` form
and what ``--baseline`` reads back."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "REPORT_VERSION",
    "BaselineComparison",
    "CaseChange",
    "CaseComparison",
    "CaseReport",
    "ExpectationFailure",
    "GroupReport",
    "Interval",
    "JudgeVerdict",
    "OutputDiff",
    "RepeatOutcome",
    "RunError",
    "TestReport",
    "VersionComparison",
]

#: The form of the JSON report (``TestReport.version``).
REPORT_VERSION = 1

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Interval(BaseModel):
    """A 95 % Wilson score interval of a pass rate."""

    model_config = _FROZEN

    low: float = Field(ge=0, le=1)
    high: float = Field(ge=0, le=1)


class ExpectationFailure(BaseModel):
    """One expectation a run did not meet: which (``valid``, ``value``, ``pointer /name``,
    ``contains``, ``regex``, ``max_cost_micro``, ``judge``, ``run`` for a run that failed, ...),
    what it expected, and the value seen."""

    model_config = _FROZEN

    expectation: str
    expected: Any = None
    seen: Any = None
    message: str


class RunError(BaseModel):
    """A run (the case's own, or its judge's) that raised: the sentinel's code and message."""

    model_config = _FROZEN

    code: str
    message: str
    reason: str | None = None


class JudgeVerdict(BaseModel):
    """What the judge said about one repeat's output: ``passed`` and ``reason`` from its answer,
    or ``error`` when its run failed or its answer held no verdict (then ``passed`` is None)."""

    model_config = _FROZEN

    profile: str
    passed: bool | None = None
    reason: str | None = None
    error: RunError | None = None
    cost_micro: int = Field(default=0, ge=0)
    request_hash: str | None = None


class RepeatOutcome(BaseModel):
    """One run of a case: ``passed`` (every expectation met), ``failed`` (some expectation not
    met, or the run itself failed: ``error``), or ``judge_error`` (every other expectation met
    and the judge gave no verdict: unscored)."""

    model_config = _FROZEN

    repeat: int = Field(ge=1)
    status: Literal["passed", "failed", "judge_error"]
    failures: tuple[ExpectationFailure, ...] = ()
    error: RunError | None = None
    judge: JudgeVerdict | None = None
    valid: bool | None = None
    cost_micro: int = Field(default=0, ge=0)
    #: The cost a gateway reported for the run (micro-USD), apart from ``cost_micro``: the one
    #: figure for a model alias scriptorium's table cannot price.
    gateway_cost_micro: int = Field(default=0, ge=0)
    latency_ms: float | None = None
    output_tokens: int | None = None
    request_hash: str | None = None
    #: The output text (cut at 10,000 characters, saying how much was cut) and, for a JSON
    #: output that parsed, its value: what a report shows and what ``--against`` diffs.
    output: str | None = None
    value: Any = Field(default=None, exclude_if=lambda value: value is None)

    @property
    def score(self) -> bool | None:
        """True passed, False failed, None unscored."""
        return None if self.status == "judge_error" else self.status == "passed"


class CaseReport(BaseModel):
    """A case on one profile over its repeats.

    ``pass_rate`` is ``passed / scored`` (``scored`` = repeats with a verdict: judge errors are
    left out, and counted in ``judge_errors``), with its Wilson ``interval``. ``status`` is
    ``failed`` when the rate is below ``min_pass_rate`` (a case with no scored repeat included),
    ``error`` when it is not below but judge errors left repeats unscored, else ``passed``.
    ``pass_hat_k``: every repeat passed; ``pass_at_k``: at least one did (None when judge errors
    leave it open). ``cost_micro`` is the case's own runs; ``judge_cost_micro`` its judges';
    ``gateway_cost_micro`` what a gateway reported for its runs (apart from ``cost_micro``).
    """

    model_config = _FROZEN

    prompt: str
    profile: str
    case: str
    status: Literal["passed", "failed", "error"]
    repeats: int = Field(ge=0)
    passed: int = Field(ge=0)
    failed: int = Field(ge=0)
    judge_errors: int = Field(ge=0)
    scored: int = Field(ge=0)
    min_pass_rate: float
    pass_rate: float | None = None
    interval: Interval | None = None
    pass_hat_k: bool | None = None
    pass_at_k: bool | None = None
    cost_micro: int = Field(default=0, ge=0)
    judge_cost_micro: int = Field(default=0, ge=0)
    gateway_cost_micro: int = Field(default=0, ge=0)
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    #: Flagged by a baseline comparison (see :class:`BaselineComparison`).
    regression: bool = False
    #: The case is marked ``must_pass``: it regressing fails a ``--against`` comparison.
    must_pass: bool = False
    #: What the case expects, as its tests file wrote it (what an HTML report shows).
    expect: dict[str, Any] | None = Field(default=None, exclude_if=lambda value: value is None)
    outcomes: tuple[RepeatOutcome, ...] = ()

    @property
    def key(self) -> tuple[str, str, str]:
        """What identifies the case across reports: prompt, profile, case name."""
        return (self.prompt, self.profile, self.case)


class GroupReport(BaseModel):
    """One prompt on one profile: its cases and their repeats pooled.

    ``pass_rate`` and ``interval`` are over every scored repeat of every case; ``pass_hat_k`` is
    the share of cases whose every repeat passed and ``pass_at_k`` the share with at least one,
    each over the cases where the answer is known (``pass_hat_k_of``, ``pass_at_k_of``).
    Latency percentiles are over the repeats whose run returned a result (nearest rank).
    """

    model_config = _FROZEN

    prompt: str
    profile: str
    cases: tuple[CaseReport, ...] = ()
    cases_passed: int = Field(default=0, ge=0)
    cases_failed: int = Field(default=0, ge=0)
    cases_errored: int = Field(default=0, ge=0)
    repeats: int = Field(default=0, ge=0)
    passed: int = Field(default=0, ge=0)
    failed: int = Field(default=0, ge=0)
    judge_errors: int = Field(default=0, ge=0)
    scored: int = Field(default=0, ge=0)
    pass_rate: float | None = None
    interval: Interval | None = None
    pass_hat_k: float | None = None
    pass_hat_k_of: int = Field(default=0, ge=0)
    pass_at_k: float | None = None
    pass_at_k_of: int = Field(default=0, ge=0)
    cost_micro: int = Field(default=0, ge=0)
    judge_cost_micro: int = Field(default=0, ge=0)
    gateway_cost_micro: int = Field(default=0, ge=0)
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None


class CaseComparison(BaseModel):
    """A case found in both the baseline and the new report."""

    model_config = _FROZEN

    prompt: str
    profile: str
    case: str
    old_pass_rate: float | None = None
    new_pass_rate: float | None = None
    new_interval: Interval | None = None
    regression: bool = False


class BaselineComparison(BaseModel):
    """The new report against an older one (``--baseline``). A case is a regression when the
    upper bound of its new Wilson interval is below its old pass rate; a drop inside the interval
    is noise and not flagged. Cases only in one of the two reports are listed, never flagged."""

    model_config = _FROZEN

    source: str | None = None
    compared: tuple[CaseComparison, ...] = ()
    regressions: int = Field(default=0, ge=0)
    new_cases: tuple[str, ...] = ()
    missing_cases: tuple[str, ...] = ()
    #: Prompts and profiles this run has and the baseline does not (``prompt [profile]``): their
    #: cases cannot be compared, whatever their names (cases match by prompt, profile and name).
    unmatched: tuple[str, ...] = ()
    #: The baseline's own prompts and profiles, listed when some of this run's are unmatched.
    held: tuple[str, ...] = ()


class TestReport(BaseModel):
    """Everything a test run found: one :class:`GroupReport` per prompt and profile, the totals,
    and the baseline comparison when one was asked for. ``ok`` is what the exit status says: every
    case passed (met its pass rate with every repeat scored) and no regression."""

    __test__ = False  # a pytest collecting a module that imports this is not to take it for tests
    model_config = _FROZEN

    version: int = REPORT_VERSION
    groups: tuple[GroupReport, ...] = ()
    cases: int = Field(default=0, ge=0)
    cases_passed: int = Field(default=0, ge=0)
    cases_failed: int = Field(default=0, ge=0)
    cases_errored: int = Field(default=0, ge=0)
    repeats: int = Field(default=0, ge=0)
    judge_errors: int = Field(default=0, ge=0)
    cost_micro: int = Field(default=0, ge=0)
    judge_cost_micro: int = Field(default=0, ge=0)
    gateway_cost_micro: int = Field(default=0, ge=0)
    #: When the run started (UTC) and how long it took.
    started_at: datetime | None = None
    duration_ms: float = Field(default=0.0, ge=0)
    #: ``record`` or ``replay`` when cassette profiles were switched for the run.
    cassettes: Literal["record", "replay"] | None = None
    provider_batch: bool = False
    baseline: BaselineComparison | None = None
    #: With ``--against``: this run (the candidate) against the reference version.
    comparison: VersionComparison | None = None
    ok: bool = True

    def all_cases(self) -> list[CaseReport]:
        """Every case report, group by group."""
        return [case for group in self.groups for case in group.cases]


class OutputDiff(BaseModel):
    """How a case's output changed between the versions, on the first repeat whose outcome
    changed (else the first): ``kind`` ``value`` for two parsed JSON values (``lines`` one per
    JSON Pointer that differs: ``~ /p: old -> new``, ``- /p: old``, ``+ /p: new``), ``text``
    otherwise (``lines`` a unified diff). ``before`` and ``after`` are the two outputs."""

    model_config = _FROZEN

    kind: Literal["value", "text"]
    repeat: int = Field(ge=1)
    before: Any = None
    after: Any = None
    lines: tuple[str, ...] = ()


class CaseChange(BaseModel):
    """A case on a profile, run on the reference (``before``) and on the candidate (``after``).
    ``change`` is ``fixed`` when it meets its pass rate only after, ``regressed`` only before,
    ``same`` otherwise; ``diff`` is there for a changed case."""

    model_config = _FROZEN

    prompt: str
    profile: str
    case: str
    change: Literal["fixed", "regressed", "same"]
    must_pass: bool = False
    before_status: Literal["passed", "failed", "error"]
    after_status: Literal["passed", "failed", "error"]
    before_passed: int = Field(ge=0)
    before_scored: int = Field(ge=0)
    after_passed: int = Field(ge=0)
    after_scored: int = Field(ge=0)
    before_pass_rate: float | None = None
    after_pass_rate: float | None = None
    before_interval: Interval | None = None
    after_interval: Interval | None = None
    diff: OutputDiff | None = None


class VersionComparison(BaseModel):
    """The candidate (the project as it is) against a reference version (``--against``): the
    same cases, profiles and repeats on both.

    Per case, a :class:`CaseChange`. Overall: repeats passed (``passed_before``,
    ``passed_after``), cases that met their pass rate, cost and p50 latency on each side, and
    the exact McNemar test over the case-and-repeat pairs whose outcomes differ
    (``fixed_pairs``: failed before, passed after; ``regressed_pairs`` the other way; pairs with
    an unscored side are left out) with its two-sided ``p_value``. ``worse``: more regressed
    than fixed pairs with ``p_value < 0.05``. ``ok`` (the exit status): not worse, and no
    ``must_pass`` case regressed. ``before`` is the reference run's whole report; cases only one
    side could run are listed in ``new_cases`` (no prompt of that id in the reference)."""

    model_config = _FROZEN

    against: str
    revision: str | None = None
    cases: tuple[CaseChange, ...] = ()
    fixed: int = Field(default=0, ge=0)
    regressed: int = Field(default=0, ge=0)
    same: int = Field(default=0, ge=0)
    new_cases: tuple[str, ...] = ()
    passed_before: int = Field(default=0, ge=0)
    passed_after: int = Field(default=0, ge=0)
    scored_before: int = Field(default=0, ge=0)
    scored_after: int = Field(default=0, ge=0)
    cases_passed_before: int = Field(default=0, ge=0)
    cases_passed_after: int = Field(default=0, ge=0)
    cost_micro_before: int = Field(default=0, ge=0)
    cost_micro_after: int = Field(default=0, ge=0)
    latency_p50_ms_before: float | None = None
    latency_p50_ms_after: float | None = None
    test: Literal["mcnemar_exact"] = "mcnemar_exact"
    pairs: int = Field(default=0, ge=0)
    fixed_pairs: int = Field(default=0, ge=0)
    regressed_pairs: int = Field(default=0, ge=0)
    unscored_pairs: int = Field(default=0, ge=0)
    p_value: float = Field(default=1.0, ge=0, le=1)
    alpha: float = 0.05
    worse: bool = False
    must_pass_regressed: tuple[str, ...] = ()
    ok: bool = True
    before: TestReport | None = None


TestReport.model_rebuild()  # its comparison is declared after it
