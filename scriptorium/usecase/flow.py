"""The run machine: every rule of a run, and no I/O.

A :class:`RunFlow` says which call to make next (:meth:`RunFlow.next_step`: a :class:`Generate`,
a :class:`Repair`, an :class:`Answered` first generation read from a provider batch, or a
:class:`NextProfile` to prepare when the run falls back), is told what the call gave
(:meth:`RunFlow.send`: the response, the repair, the plan, or the error it failed with), and at
the end builds the :class:`RunResult` (:meth:`RunFlow.result`). Judging an output (validation, the
refusal and truncation issues, the Unicode check), deciding whether to repair or to fall back,
recording each attempt and summing usage all happen here, so every driver (sync, async, streamed,
observed, batch answers) shares them. Drivers only make the calls; they never decide.

Failed calls come back as outcomes, not exceptions, so the decision about a failure is the
flow's too: a failed repair ends the repairs and stays in the result; a failed generation moves
the run to the next profile of its fallback chain when the chain says so, and is raised from
:meth:`RunFlow.send` otherwise; an output still invalid after the profile's repairs may move it on
too. Which profile comes next, cooldowns and the records of the profiles left are the
:class:`~scriptorium.usecase.fallback.FallbackChain`'s, which the flow asks: moving on is a
:class:`~scriptorium.usecase.fallback.NextProfile` step, and every driver follows, because each
step carries the plan it belongs to and drivers take the request, the boundary's context and the
observer's details from the step. The run's clock is read at its end.

Shaped like h11's connection object: the caller asks for the next step and feeds the outcome back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, ClassVar, Literal

from scriptorium.errors import LLMGenerateError, ScriptoriumError, ValidationError, translate
from scriptorium.hashing import hash_text
from scriptorium.limits.cooldown import Cooldowns
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.observe.observer import GenerationKind
from scriptorium.usecase.fallback import Ended, FallbackChain, Move, NextProfile
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

#: What a call gave back: a response (a generation), a repair, or the failure of either
#: (``LLMGenerateError``); for a :class:`NextProfile` step, the plan or the error preparing it raised.
Outcome = LLMResponse | RepairResult | Plan | ScriptoriumError

# The finish reasons with an issue keyword of their own. Any ending but a normal ``stop`` makes
# the generation invalid and is never repaired: these two by their keyword, any other one
# (a provider's own ending, kept as it names it) by ``finish_reason``.
_ENDING_KEYWORDS = {"length": "truncated", "refusal": "refusal"}
_ENDING_WHY = {
    "truncated": "the generation stopped at max_tokens; the output is incomplete",
    "refusal": "the model refused to answer",
}

# Keys every RunResult.metadata has, None when the adapter did not report them, so consumers can
# read them without guarding against absence.
_METADATA_KEYS = ("request_id", "strategy", "service_tier", "pricing")


@dataclass(frozen=True, slots=True)
class _Call:
    """A call of the run's current ``plan``; ``attempt`` is the generation's 1-based place in
    ``RunResult.attempts``."""

    plan: Plan
    attempt: int

    @property
    def request(self) -> LLMRequest:
        """The request sent (or, for a batch, answered)."""
        return self.plan.request


@dataclass(frozen=True, slots=True)
class Generate(_Call):
    """Ask the client for a generation of ``plan.request``; ``attempt`` is the generation's
    1-based place in ``RunResult.attempts``."""

    kind: ClassVar[GenerationKind] = "initial"
    #: What the LLM boundary says it was doing when a call fails.
    what: ClassVar[str] = "calling the model"


@dataclass(frozen=True, slots=True)
class Answered(_Call):
    """Read the first generation from ``answer(plan.request)``: a provider batch already made it."""

    kind: ClassVar[GenerationKind] = "batch"
    what: ClassVar[str] = "reading the batch result"

    answer: Answer


@dataclass(frozen=True, slots=True)
class Repair(_Call):
    """Ask the repairer for another attempt at ``context.previous_output``."""

    kind: ClassVar[GenerationKind] = "repair"
    what: ClassVar[str] = "repairing the output"

    context: RepairContext

    @property
    def request(self) -> LLMRequest:
        """The request whose output is repaired."""
        return self.context.request


Step = Generate | Answered | Repair | NextProfile


def judge(
    response: LLMResponse, contract: OutputContract, validator: Validator
) -> ValidationResult:
    """The verdict on one generation: the validator's, made invalid by any ending but a normal
    stop (a refusal, a truncated ``length`` generation, or another ending the provider named) and
    by lone surrogates, each with its issue first (the surrogates' before the ending's)."""
    with translate(ValidationError, "validating the output"):
        verdict = validator.validate(response.text, contract)
    finish = response.finish_reason
    if finish != "stop":
        keyword = _ENDING_KEYWORDS.get(finish, "finish_reason")
        why = _ENDING_WHY.get(keyword, f"the generation ended with {finish!r}, not a normal stop")
        issue = ValidationIssue(message=why, keyword=keyword)
        verdict = verdict.model_copy(
            update={"valid": False, "value": None, "issues": (issue, *verdict.issues)}
        )
    # Lone surrogates last: their issue comes first (a corrupted finish reason is one too).
    return unicode_checked(verdict, response)


def may_repair(
    verdict: ValidationResult, response: LLMResponse, contract: OutputContract, repairs: int
) -> bool:
    """Whether another repair may follow ``repairs`` repairs (given a repairer): the output is
    invalid JSON of a JSON format, repairs are left, and the generation ended with a normal stop
    (a repair fixes neither a refusal, nor max_tokens, nor another ending the provider named)."""
    return (
        not verdict.valid
        and contract.format in ("json", "json_schema")
        and repairs < contract.repair_attempts
        and response.finish_reason == "stop"
    )


class RunFlow:
    """One run's machine, from its plan to its result. Not thread-safe; one per run.

    ``cooldowns``: the table of profiles cooling down (None: no cooldowns are kept or asked).
    A run answered by a provider batch (``answer``) never falls back (see
    :mod:`~scriptorium.usecase.fallback`)."""

    __slots__ = (
        "_can_repair",
        "_chain",
        "_clock",
        "_first_generation",
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
        cooldowns: Cooldowns | None = None,
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
        self._first_generation = 0  # where the current profile's generations start
        self._step: Step | None = Generate(plan, 1) if answer is None else Answered(plan, 1, answer)
        self._chain = FallbackChain(
            plan, enabled=answer is None, started=started, clock=clock, cooldowns=cooldowns
        )
        move = self._chain.opening(plan)
        if move is not None:
            self._go(move)

    @property
    def plan(self) -> Plan:
        """The plan the run answers with (the one its result reports)."""
        return self._plan

    def next_step(self) -> Step | None:
        """The call to make now; None once the run is over (then :meth:`result`)."""
        return self._step

    def send(self, outcome: Outcome) -> None:
        """What the call of :meth:`next_step` gave. Raises the generation's failure when the run
        cannot fall back (there is no output to report), and the validator's operational errors
        (``ValidationError``)."""
        step = self._step
        if step is None:
            raise RuntimeError("the run is over: nothing was asked")
        if isinstance(step, NextProfile):
            self._go(self._chain.prepared(self._plan, step, outcome))
            return
        if not isinstance(step, Repair):
            self._chain.called = True
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
        usage = self._usage(attempts)
        last = generations[-1]
        verdict = verdict.model_copy(
            update={"attempts": len(attempts), "repaired": verdict.valid and last.kind == "repair"}
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
                text=last.response.text,
                sha256=hash_text(last.response.text),
                reasoning=last.response.reasoning,
            ),
            validation=verdict,
            attempts=attempts,
            usage=usage,
            finish_reason=last.response.finish_reason,
            model=last.response.model or prepared.target.model,
            metadata=_result_metadata(last.response, prepared),
            fallbacks=tuple(self._chain.records),
        )

    def _usage(self, attempts: tuple[AttemptRecord, ...], extra: int = 0) -> Usage:
        """Every attempt's usage, plus what the failed calls of the profiles left used, plus
        ``extra`` HTTP requests (a final failed call's)."""
        usage = Usage(llm_calls=extra)
        for attempt in attempts:
            usage = usage + attempt.usage
        for left in self._chain.records:
            usage = usage + left.usage
        return usage

    def _failed(self, step: Step, error: LLMGenerateError) -> None:
        self._chain.cool(self._plan, error, now=not isinstance(step, Answered))
        if isinstance(step, Repair) and self._verdict is not None:
            # A failed repair call ends the repairs but keeps what was already generated and
            # paid for; the failure is reported as an issue, not raised.
            failed = ValidationIssue(
                message=f"repair {self._repairs} failed: {error.message}",
                keyword="repair_failed",
            )
            verdict = self._verdict
            self._verdict = verdict.model_copy(update={"issues": (*verdict.issues, failed)})
            self._generations[-1] = self._generations[-1].with_failed_calls(error.attempts or 0)
            self._judged_last()
            return
        move = self._chain.failed(self._plan, error, len(self._generations) + 1)
        self._go(Ended(error) if move is None else move)

    def _raised(self, error: LLMGenerateError) -> LLMGenerateError:
        """``error``, carrying the profiles left before it and the whole run's usage."""
        if self._chain.records:
            attempts = tuple(g.record() for g in self._generations)
            error.fallbacks = tuple(self._chain.records)
            error.usage = self._usage(attempts, error.attempts or 0)
        return error

    def _judged(self, kind: Literal["initial", "repair"], response: LLMResponse) -> None:
        plan = self._plan
        contract = plan.prepared.output
        verdict = judge(response, contract, self._validator)
        self._generations.append(_Generation(kind, response, verdict, plan.prepared))
        self._verdict = verdict
        if not (self._can_repair and may_repair(verdict, response, contract, self._repairs)):
            self._judged_last()
            return
        self._repairs += 1
        context = RepairContext(
            prepared=plan.prepared,
            request=plan.request,
            previous_output=response.text,
            issues=verdict.issues,
            attempt=self._repairs,
        )
        self._step = Repair(plan, len(self._generations) + 1, context)

    def _judged_last(self) -> None:
        """The current profile's last verdict is in: the run ends on it, or moves on when it is
        invalid and the profile falls back on ``invalid_output``."""
        verdict = self._verdict
        plan = self._plan
        if verdict is None or verdict.valid or not self._chain.leaves_on(plan, "invalid_output"):
            self._step = None
            return
        mine = self._generations[self._first_generation :]
        calls = sum(g.record().usage.llm_calls for g in mine)
        attempt = len(self._generations) + 1
        self._go(self._chain.invalid(plan, verdict, len(mine) - 1, calls, attempt))

    def _go(self, move: Move) -> None:
        """Follow the chain's ``move``: generate a plan (a profile just prepared, or the current
        one after all), prepare the next profile, or end the run (raising the failure the last
        profile was left for, carrying the profiles left and the whole run's usage)."""
        if isinstance(move, NextProfile):
            self._step = move
        elif isinstance(move, Plan):
            self._plan = move
            self._repairs = 0
            self._first_generation = len(self._generations)
            self._step = Generate(move, len(self._generations) + 1)
        else:
            self._step = None
            if move.error is not None:
                raise self._raised(move.error)


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
    """One generation made: its response, its verdict, the prepared run it was made on, and the
    HTTP requests of a repair call that failed after it (paid for, so counted in its
    ``llm_calls``)."""

    kind: Literal["initial", "repair"]
    response: LLMResponse
    verdict: ValidationResult
    prepared: PreparedRun
    failed_calls: int = 0

    def with_failed_calls(self, calls: int) -> _Generation:
        return replace(self, failed_calls=self.failed_calls + calls)

    def record(self) -> AttemptRecord:
        usage = self.response.usage.model_copy(
            update={"llm_calls": self.response.attempts + self.failed_calls}
        )
        target = self.prepared.target
        return AttemptRecord(
            kind=self.kind,
            text=self.response.text,
            reasoning=self.response.reasoning,
            finish_reason=self.response.finish_reason,
            usage=usage,
            latency_ms=self.response.latency_ms,
            valid=self.verdict.valid,
            issues=self.verdict.issues,
            profile=self.prepared.profile,
            provider=target.provider,
            model=self.response.model or target.model,
        )
