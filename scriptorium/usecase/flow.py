"""The run machine: every rule of a run, and no I/O.

A :class:`RunFlow` says which call to make next (:meth:`RunFlow.next_step`: a :class:`Generate`,
a :class:`Repair`, or an :class:`Answered` first generation read from a provider batch), is told
what the call gave (:meth:`RunFlow.send`: the response, the repair, or the ``LLMGenerateError`` it
failed with), and at the end builds the :class:`RunResult` (:meth:`RunFlow.result`). Judging an
output (validation, the refusal and truncation issues, the Unicode check), deciding whether to
repair, recording each attempt and summing usage all happen here, so every driver (sync, async,
streamed, observed, batch answers) shares them. Drivers only make the calls; they never decide.

Failed calls come back as outcomes, not exceptions, so the decision about a failure is the
flow's too: a failed repair ends the repairs and stays in the result; a failed generation is raised
from :meth:`RunFlow.send`. That one place (:meth:`RunFlow._failed`) is where a fallback to the next
profile of a chain would go: it would answer with a :class:`Generate` step for that profile's plan
instead of raising, and every driver would follow without a change, because each step carries the
plan it belongs to and drivers take the request, the boundary's context and the observer's
details from the step.

Shaped like h11's connection object: the caller asks for the next step and feeds the outcome back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Literal

from scriptorium.errors import LLMGenerateError, ValidationError, translate
from scriptorium.hashing import hash_text
from scriptorium.llm.model import LLMRequest, LLMResponse
from scriptorium.observe.observer import GenerationKind
from scriptorium.usecase.model import AttemptRecord, OutputRecord, PreparedRun, RunResult
from scriptorium.usecase.plan import Plan
from scriptorium.usecase.repair import RepairContext, RepairResult
from scriptorium.usecase.unicode import checked_verdict as unicode_checked
from scriptorium.validate.model import OutputContract, ValidationIssue, ValidationResult
from scriptorium.validate.validator import Validator

__all__ = [
    "Answer",
    "Answered",
    "Generate",
    "Outcome",
    "Repair",
    "RunFlow",
    "Step",
    "judge",
    "may_repair",
]

#: The first generation of a run answered by a provider batch: ``answer(llm_request)``.
Answer = Callable[[LLMRequest], LLMResponse]

#: What a call gave back: a response (a generation), a repair, or the failure of either.
Outcome = LLMResponse | RepairResult | LLMGenerateError

# Finish reasons after which the output is never repaired, and the issue keyword they add.
_NO_REPAIR_AFTER = {"length": "truncated", "refusal": "refusal"}

# Keys every RunResult.metadata has, None when the adapter did not report them, so consumers can
# read them without guarding against absence.
_METADATA_KEYS = ("request_id", "strategy", "service_tier", "pricing")


@dataclass(frozen=True, slots=True)
class Generate:
    """Ask the client for a generation of ``plan.request``; ``attempt`` is the generation's
    1-based place in ``RunResult.attempts``."""

    kind: ClassVar[GenerationKind] = "initial"
    #: What the LLM boundary says it was doing when a call fails.
    what: ClassVar[str] = "calling the model"

    plan: Plan
    attempt: int

    @property
    def request(self) -> LLMRequest:
        """The request sent."""
        return self.plan.request


@dataclass(frozen=True, slots=True)
class Answered:
    """Read the first generation from ``answer(plan.request)``: a provider batch already made it."""

    kind: ClassVar[GenerationKind] = "batch"
    what: ClassVar[str] = "reading the batch result"

    plan: Plan
    attempt: int
    answer: Answer

    @property
    def request(self) -> LLMRequest:
        """The request the batch answered."""
        return self.plan.request


@dataclass(frozen=True, slots=True)
class Repair:
    """Ask the repairer for another attempt at ``context.previous_output``."""

    kind: ClassVar[GenerationKind] = "repair"
    what: ClassVar[str] = "repairing the output"

    plan: Plan
    attempt: int
    context: RepairContext

    @property
    def request(self) -> LLMRequest:
        """The request whose output is repaired."""
        return self.context.request


Step = Generate | Answered | Repair


def judge(
    response: LLMResponse, contract: OutputContract, validator: Validator
) -> ValidationResult:
    """The verdict on one generation: the validator's, made invalid by lone surrogates and by a
    refusal or a truncated (``length``) generation, each with its issue first."""
    with translate(ValidationError, "validating the output"):
        verdict = validator.validate(response.text, contract)
    verdict = unicode_checked(verdict, response)
    keyword = _NO_REPAIR_AFTER.get(response.finish_reason)
    if keyword is not None:
        why = (
            "the generation stopped at max_tokens; the output is incomplete"
            if keyword == "truncated"
            else "the model refused to answer"
        )
        issue = ValidationIssue(message=why, keyword=keyword)
        verdict = verdict.model_copy(
            update={"valid": False, "value": None, "issues": (issue, *verdict.issues)}
        )
    return verdict


def may_repair(
    verdict: ValidationResult, response: LLMResponse, contract: OutputContract, repairs: int
) -> bool:
    """Whether another repair may follow ``repairs`` repairs (given a repairer): the output is
    invalid JSON of a JSON format, repairs are left, and the model neither refused nor stopped at
    max_tokens (a repair would not fix either)."""
    return (
        not verdict.valid
        and contract.format in ("json", "json_schema")
        and repairs < contract.repair_attempts
        and response.finish_reason not in _NO_REPAIR_AFTER
    )


class RunFlow:
    """One run's machine, from its plan to its result. Not thread-safe; one per run."""

    __slots__ = (
        "_can_repair",
        "_clock",
        "_generations",
        "_plan",
        "_repairs",
        "_run_id",
        "_started",
        "_step",
        "_validator",
        "_verdict",
    )

    def __init__(
        self,
        plan: Plan,
        *,
        validator: Validator,
        can_repair: bool,
        run_id: str,
        started: datetime,
        clock: Callable[[], datetime],
        answer: Answer | None = None,
    ) -> None:
        self._plan = plan
        self._validator = validator
        self._can_repair = can_repair
        self._run_id = run_id
        self._started = started
        self._clock = clock
        self._generations: list[_Generation] = []
        self._verdict: ValidationResult | None = None
        self._repairs = 0
        self._step: Step | None = Generate(plan, 1) if answer is None else Answered(plan, 1, answer)

    @property
    def plan(self) -> Plan:
        """The plan the run answers with (the one its result reports)."""
        return self._plan

    def next_step(self) -> Step | None:
        """The call to make now; None once the run is over (then :meth:`result`)."""
        return self._step

    def send(self, outcome: Outcome) -> None:
        """What the call of :meth:`next_step` gave. Raises the generation's failure (there is no
        output to report), and the validator's operational errors (``ValidationError``)."""
        step = self._step
        if step is None:
            raise RuntimeError("the run is over: nothing was asked")
        if isinstance(outcome, LLMGenerateError):
            self._failed(step, outcome)
        elif isinstance(step, Repair):
            if not isinstance(outcome, RepairResult):
                raise TypeError(f"a repair gives a RepairResult, not {type(outcome).__name__}")
            self._judged("repair", outcome.response)
        else:
            if not isinstance(outcome, LLMResponse):
                raise TypeError(f"a generation gives an LLMResponse, not {type(outcome).__name__}")
            self._judged("initial", outcome)

    def result(self) -> RunResult:
        """The run's result, from every generation made; the clock is read once, for its end."""
        if self._step is not None or self._verdict is None:
            raise RuntimeError("the run is not over")
        generations = self._generations
        verdict = self._verdict
        attempts = tuple(g.record() for g in generations)
        usage = attempts[0].usage
        for attempt in attempts[1:]:
            usage = usage + attempt.usage
        last = generations[-1].response
        verdict = verdict.model_copy(
            update={"attempts": len(attempts), "repaired": verdict.valid and len(attempts) > 1}
        )
        prepared = self._plan.prepared
        finished = self._clock()
        return RunResult(
            run_id=self._run_id,
            started_at=self._started,
            finished_at=finished,
            duration_ms=max(0.0, (finished - self._started).total_seconds() * 1000.0),
            prepared=prepared,
            output=OutputRecord(
                text=last.text, sha256=hash_text(last.text), reasoning=last.reasoning
            ),
            validation=verdict,
            attempts=attempts,
            usage=usage,
            finish_reason=last.finish_reason,
            model=last.model or prepared.target.model,
            metadata=_result_metadata(last, prepared),
        )

    def _failed(self, step: Step, error: LLMGenerateError) -> None:
        self._step = None
        if not isinstance(step, Repair) or self._verdict is None:
            raise error  # no output to report (a fallback would take the next profile here)
        # A failed repair call ends the repairs but keeps what was already generated and paid
        # for; the failure is reported as an issue, not raised.
        failed = ValidationIssue(
            message=f"repair {self._repairs} failed: {error.message}", keyword="repair_failed"
        )
        verdict = self._verdict
        self._verdict = verdict.model_copy(update={"issues": (*verdict.issues, failed)})
        self._generations[-1] = self._generations[-1].with_failed_calls(error.attempts or 0)

    def _judged(self, kind: Literal["initial", "repair"], response: LLMResponse) -> None:
        contract = self._plan.prepared.output
        verdict = judge(response, contract, self._validator)
        self._generations.append(_Generation(kind, response, verdict))
        self._verdict = verdict
        if not (self._can_repair and may_repair(verdict, response, contract, self._repairs)):
            self._step = None
            return
        self._repairs += 1
        context = RepairContext(
            prepared=self._plan.prepared,
            request=self._plan.request,
            previous_output=response.text,
            issues=verdict.issues,
            attempt=self._repairs,
        )
        self._step = Repair(self._plan, len(self._generations) + 1, context)


def _result_metadata(response: LLMResponse, prepared: PreparedRun) -> dict[str, Any]:
    """The last generation's adapter metadata; ``ignored_settings`` always said, from the prepared
    run when the client did not report it (an injected client knows nothing of the provider)."""
    metadata = dict(response.metadata)
    if "ignored_settings" not in metadata:
        metadata["ignored_settings"] = list(prepared.ignored_settings)
    for key in _METADATA_KEYS:
        metadata.setdefault(key, None)
    return metadata


@dataclass(frozen=True, slots=True)
class _Generation:
    """One generation made: its response, its verdict, and the HTTP requests of a repair call that
    failed after it (paid for, so counted in its ``llm_calls``)."""

    kind: Literal["initial", "repair"]
    response: LLMResponse
    verdict: ValidationResult
    failed_calls: int = 0

    def with_failed_calls(self, calls: int) -> _Generation:
        return _Generation(self.kind, self.response, self.verdict, self.failed_calls + calls)

    def record(self) -> AttemptRecord:
        usage = self.response.usage.model_copy(
            update={"llm_calls": self.response.attempts + self.failed_calls}
        )
        return AttemptRecord(
            kind=self.kind,
            text=self.response.text,
            reasoning=self.response.reasoning,
            finish_reason=self.response.finish_reason,
            usage=usage,
            latency_ms=self.response.latency_ms,
            valid=self.verdict.valid,
            issues=self.verdict.issues,
        )
