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
    "CaseComparison",
    "CaseReport",
    "ExpectationFailure",
    "GroupReport",
    "Interval",
    "JudgeVerdict",
    "RepeatOutcome",
    "RunError",
    "TestReport",
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
    latency_ms: float | None = None
    output_tokens: int | None = None
    request_hash: str | None = None

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
    leave it open). ``cost_micro`` is the case's own runs; ``judge_cost_micro`` its judges'.
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
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    #: Flagged by a baseline comparison (see :class:`BaselineComparison`).
    regression: bool = False
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
    #: When the run started (UTC) and how long it took.
    started_at: datetime | None = None
    duration_ms: float = Field(default=0.0, ge=0)
    #: ``record`` or ``replay`` when cassette profiles were switched for the run.
    cassettes: Literal["record", "replay"] | None = None
    provider_batch: bool = False
    baseline: BaselineComparison | None = None
    ok: bool = True

    def all_cases(self) -> list[CaseReport]:
        """Every case report, group by group."""
        return [case for group in self.groups for case in group.cases]
