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
the run to the next profile of its fallback chain when the profile's ``fallback_on`` lists its
reason (and no text of it reached a stream's consumer), and is raised from :meth:`RunFlow.send`
otherwise. An output still invalid after the profile's repairs moves on too when ``invalid_output``
is listed. Moving on is a :class:`NextProfile` step: the driver prepares that profile's plan (as a
run on it would be) and hands it back, and the next step generates it; every driver follows,
because each step carries the plan it belongs to and drivers take the request, the boundary's
context and the observer's details from the step.

The one collaborator the flow asks itself is the cooldown table (a read, a note; never a wait): the
target a profile called (provider, endpoint, model, key: ``limits.cooldown.target_key``), when it failed
busy (``rate_limited``, ``overloaded``), is noted, and a later run skips a profile whose plan calls
a target still cooling down, unless it is the last its chain can try. The run's clock is read at its end,
and at each fallback when the request set ``timeout_s`` (the chain shares that one budget).

Shaped like h11's connection object: the caller asks for the next step and feeds the outcome back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, ClassVar, Literal

from scriptorium.errors import LLMGenerateError, ScriptoriumError, ValidationError, translate
from scriptorium.hashing import hash_text
from scriptorium.limits.cooldown import BUSY_REASONS, Cooldowns, cooldown_for, target_key
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.observe.observer import GenerationKind
from scriptorium.usecase.model import (
    AttemptRecord,
    FallbackRecord,
    OutputRecord,
    PreparedRun,
    RunRequest,
    RunResult,
)
from scriptorium.usecase.plan import Plan
from scriptorium.usecase.repair import RepairContext, RepairResult
from scriptorium.usecase.unicode import checked_verdict as unicode_checked
from scriptorium.validate.model import OutputContract, ValidationIssue, ValidationResult
from scriptorium.validate.validator import Validator

__all__ = [
    "Answer",
    "Answered",
    "Generate",
    "NextProfile",
    "Outcome",
    "Repair",
    "RunFlow",
    "Step",
    "cooldown_key",
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


@dataclass(frozen=True, slots=True)
class NextProfile:
    """Prepare the run on ``profile``, the next profile of the fallback chain: the run left
    ``left`` for ``reason`` (skipping ``skipped``, cooling down). Its outcome is the profile's
    :class:`Plan`, or the error preparing it raised. Not a generation: nothing is observed."""

    what: ClassVar[str] = "preparing the next profile of the fallback chain"

    #: The run's current plan (the profile left, or the last one prepared): the boundary's
    #: context and the log scope.
    plan: Plan
    #: The place the next generation will have in ``RunResult.attempts``.
    attempt: int
    #: The request the run was made from (the profile's plan is prepared from it).
    origin: RunRequest
    profile: str
    left: str
    reason: str
    skipped: tuple[str, ...] = ()

    @property
    def request(self) -> LLMRequest:
        """The request of the run's current plan."""
        return self.plan.request


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
    A run answered by a provider batch (``answer``) never falls back: the batch answered for the
    first profile, and a row it failed is sent again when the batch is resumed."""

    __slots__ = (
        "_budget_s",
        "_called",
        "_can_repair",
        "_chain",
        "_clock",
        "_cooldowns",
        "_error",
        "_fallbacks",
        "_first_generation",
        "_generations",
        "_left",
        "_origin",
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
        self._cooldowns = cooldowns
        self._generations: list[_Generation] = []
        self._verdict: ValidationResult | None = None
        self._repairs = 0
        self._step: Step | None = Generate(plan, 1) if answer is None else Answered(plan, 1, answer)
        # The fallback chain: the names still to try, the profiles left, the request the chain's
        # plans are made from, and the budget they share (the request's own timeout_s).
        self._origin = plan.origin
        self._chain = list(plan.fallbacks) if answer is None and plan.origin is not None else []
        self._fallbacks: list[FallbackRecord] = []
        self._budget_s = plan.origin.overrides.timeout_s if self._chain and plan.origin else None
        self._called = False  # whether the current plan was called (or skipped, not yet)
        self._first_generation = 0  # where the current profile's generations start
        self._left = -1  # the record of the profile left last
        self._error: LLMGenerateError | None = None  # the failure it was left for
        if self._chain and cooldowns is not None:
            wait = cooldowns.remaining(cooldown_key(plan))
            if wait > 0:
                self._leave(_cooling(plan.prepared.profile, wait, plan), None)

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
            self._prepared(step, outcome)
            return
        if not isinstance(step, Repair):
            self._called = True
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
            fallbacks=tuple(self._fallbacks),
        )

    def _usage(self, attempts: tuple[AttemptRecord, ...], extra: int = 0) -> Usage:
        """Every attempt's usage, plus what the failed calls of the profiles left used, plus
        ``extra`` HTTP requests (a final failed call's)."""
        usage = Usage(llm_calls=extra)
        for attempt in attempts:
            usage = usage + attempt.usage
        for left in self._fallbacks:
            usage = usage + left.usage
        return usage

    def _failed(self, step: Step, error: LLMGenerateError) -> None:
        plan = self._plan
        # Busy now: later runs leave the profile alone for a while (a batch's answer was made
        # earlier and says nothing about now).
        busy = error.reason in BUSY_REASONS and not isinstance(step, Answered)
        if busy and self._cooldowns is not None:
            self._cooldowns.cool(cooldown_key(plan), cooldown_for(error.retry_after_s))
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
        if self._chain and error.reason in plan.fallback_on and not error.partial_text:
            calls = error.attempts or 0
            record = _left(plan, error.code, error.reason or "", error.message, calls)
            record = record.model_copy(
                update={"usage": Usage(llm_calls=calls), "retry_after_s": error.retry_after_s}
            )
            self._leave(record, error)
            return
        self._step = None
        raise self._raised(error)

    def _raised(self, error: LLMGenerateError) -> LLMGenerateError:
        """``error``, carrying the profiles left before it and the whole run's usage."""
        if self._fallbacks:
            attempts = tuple(g.record() for g in self._generations)
            error.fallbacks = tuple(self._fallbacks)
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
        if verdict is None or verdict.valid or not self._chain:
            self._step = None
            return
        if "invalid_output" not in plan.fallback_on:
            self._step = None
            return
        mine = self._generations[self._first_generation :]
        calls = sum(g.record().usage.llm_calls for g in mine)
        issues = verdict.issues
        first = (
            f"; first: {issues[0].path or '/'} fails {issues[0].keyword or 'parse'}"
            if issues
            else ""
        )
        message = (
            f"the output stayed invalid after {len(mine) - 1} repair(s) "
            f"({len(issues)} issue{'' if len(issues) == 1 else 's'}{first})"
        )
        self._leave(_left(plan, "output_invalid", "invalid_output", message[:300], calls), None)

    def _leave(self, record: FallbackRecord, error: LLMGenerateError | None) -> None:
        """Leave the current profile (``record`` says why) for the next of the chain."""
        self._fallbacks.append(record)
        self._left = len(self._fallbacks) - 1
        self._error = error
        self._advance(record.profile, record.reason)

    def _advance(self, left: str, reason: str, skipped: tuple[str, ...] = ()) -> None:
        """Ask for the next profile of the chain (whether its target cools down is known once
        it is prepared, :meth:`_prepared`); the run ends when none is left."""
        if self._chain:
            name = self._chain.pop(0)
            attempt = len(self._generations) + 1
            origin = self._origin
            assert origin is not None, "a chain is kept only for a plan that has its request"
            self._step = NextProfile(self._plan, attempt, origin, name, left, reason, skipped)
            return
        self._end()

    def _prepared(self, step: NextProfile, outcome: Outcome) -> None:
        """The outcome of a :class:`NextProfile` step: its plan, generated next (with what is left
        of the shared budget), or why it could not be prepared (recorded; the chain goes on)."""
        if isinstance(outcome, ScriptoriumError):
            reason = getattr(outcome, "reason", None)
            record = FallbackRecord(
                profile=step.profile,
                code=outcome.code,
                reason=reason if isinstance(reason, str) else outcome.code,
                message=outcome.message,
            )
            self._fallbacks.append(record)
            self._advance(step.profile, record.reason)
            return
        if not isinstance(outcome, Plan):
            raise TypeError(f"preparing a profile gives a Plan, not {type(outcome).__name__}")
        plan = outcome
        if self._budget_s is not None:
            spent = (self._clock() - self._started).total_seconds()
            left = self._budget_s - spent
            if left <= 0:
                message = f"not tried: the run's timeout_s of {self._budget_s:g} s was used up"
                self._fallbacks.append(_left(plan, "llm_generate", "timeout", message, 0))
                self._chain.clear()
                self._end()
                return
            plan = replace(plan, request=plan.request.model_copy(update={"budget_s": left}))
        if self._chain and self._cooldowns is not None:
            # A target still cooling down is skipped (recorded) unless it is the last to try.
            wait = self._cooldowns.remaining(cooldown_key(plan))
            if wait > 0:
                self._fallbacks.append(_cooling(step.profile, wait, plan))
                self._advance(step.left, step.reason, (*step.skipped, step.profile))
                return
        self._plan = plan
        self._repairs = 0
        self._called = False
        self._first_generation = len(self._generations)
        self._step = Generate(plan, len(self._generations) + 1)

    def _end(self) -> None:
        """No later profile can be tried: the run ends on the profile left last, which the
        result (or the error raised) reports, so its own record goes. A run whose first profile
        was skipped, cooling down, tries it after all."""
        if self._left >= 0:
            del self._fallbacks[self._left]
            self._left = -1
        if not self._called:
            self._step = Generate(self._plan, len(self._generations) + 1)
            return
        self._step = None
        if self._error is not None:
            raise self._raised(self._error)


def cooldown_key(plan: Plan) -> str:
    """The cooldown key of the target ``plan`` calls (:func:`target_key`): its provider,
    endpoint, platform and region, model, and the credentials it sends (its key, its route's
    signing secrets)."""
    target = plan.prepared.target
    key = plan.request.api_key
    return target_key(
        target.provider,
        target.endpoint,
        (None if key is None else key.get_secret_value(), *plan.signing_secrets),
        model=target.model,
        platform=target.platform,
        region=target.region,
    )


def _left(plan: Plan, code: str, reason: str, message: str, attempts: int) -> FallbackRecord:
    """The record of leaving ``plan``'s profile."""
    prepared = plan.prepared
    return FallbackRecord(
        profile=prepared.profile,
        provider=prepared.target.provider,
        model=prepared.target.model,
        request_hash=prepared.request_hash,
        code=code,
        reason=reason,
        message=message,
        attempts=attempts,
    )


def _cooling(profile: str, wait: float, plan: Plan | None) -> FallbackRecord:
    """The record of a profile skipped while it cools down (``plan``: when it was prepared)."""
    message = f"skipped: cooling down for {wait:.1f} s more after the provider said it was busy"
    wait = round(wait, 3)
    if plan is None:
        return FallbackRecord(
            profile=profile, code="cooldown", reason="cooldown", message=message, retry_after_s=wait
        )
    record = _left(plan, "cooldown", "cooldown", message, 0)
    return record.model_copy(update={"retry_after_s": wait})


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
