"""The fallback chain of a run: which profile it tries next, and the records of those it left.

A :class:`FallbackChain` is what the run machine (:class:`~scriptorium.usecase.flow.RunFlow`)
asks when a profile may have to be left, and does no I/O either. A failed generation leaves its
profile when the profile's ``fallback_on`` lists its reason and no text of it reached a stream's
consumer; an output still invalid after the profile's repairs leaves it when ``invalid_output`` is
listed. Leaving is a :class:`NextProfile` step: the driver prepares that profile's plan (as a run
on it would be) and hands it back, and the chain says what comes next (a :class:`Move`): the
plan to generate, the next profile to prepare, or the end of the run.

The one collaborator the chain asks is the cooldown table (a read, a note; never a wait): the
target a profile called (provider, endpoint, model, key: :func:`cooldown_key`), when it failed
busy (``rate_limited``, ``overloaded``), is noted, and a later run skips a profile whose plan calls
a target still cooling down, unless it is the last its chain can try. The run's clock is read at
each fallback when the request set ``timeout_s`` (the chain shares that one budget).

A run answered by a provider batch never falls back: the batch answered for the first profile,
and a row it failed is sent again when the batch is resumed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import ClassVar

from scriptorium.errors import LLMGenerateError, ScriptoriumError
from scriptorium.limits.cooldown import BUSY_REASONS, Cooldowns, cooldown_for, target_key
from scriptorium.llm.model import LLMRequest, Usage
from scriptorium.usecase.model import FallbackRecord, RunRequest
from scriptorium.usecase.plan import Plan
from scriptorium.validate.model import ValidationResult

__all__ = ["Ended", "FallbackChain", "Move", "NextProfile", "cooldown_key"]


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


@dataclass(frozen=True, slots=True)
class Ended:
    """No later profile can be tried: the run ends on the profile left last, raising ``error``
    (the failure that profile was left for) when there is one."""

    error: LLMGenerateError | None = None


#: What the chain says comes next: the :class:`Plan` to generate (a profile just prepared, or
#: the current one after all), the :class:`NextProfile` to prepare, or the run's end.
Move = Plan | NextProfile | Ended


class FallbackChain:
    """The fallback chain of one run: the profiles still to try, the records of those left (the
    result's ``fallbacks``), and the budget they share. Not thread-safe; one per run.

    ``enabled``: False for a run that never falls back (one answered by a provider batch).
    ``cooldowns``: the table of targets cooling down (None: none are kept or asked)."""

    __slots__ = (
        "_budget_s",
        "_clock",
        "_cooldowns",
        "_error",
        "_left",
        "_names",
        "_origin",
        "_started",
        "called",
        "records",
    )

    def __init__(
        self,
        plan: Plan,
        *,
        enabled: bool,
        started: datetime,
        clock: Callable[[], datetime],
        cooldowns: Cooldowns | None,
    ) -> None:
        origin = plan.origin
        self._origin = origin
        self._names = list(plan.fallbacks) if enabled and origin is not None else []
        # The budget the chain's profiles share: the request's own timeout_s.
        self._budget_s = origin.overrides.timeout_s if self._names and origin else None
        self._started = started
        self._clock = clock
        self._cooldowns = cooldowns
        #: The profiles left, each with why (and what their failed calls used).
        self.records: list[FallbackRecord] = []
        #: Whether the current plan was called (or skipped, not yet); the run machine sets it.
        self.called = False
        self._left = -1  # the record of the profile left last
        self._error: LLMGenerateError | None = None  # the failure it was left for

    def opening(self, plan: Plan) -> Move | None:
        """At the run's start: a first profile whose target still cools down is left for the
        next (None: it is generated)."""
        if self._names and self._cooldowns is not None:
            wait = self._cooldowns.remaining(cooldown_key(plan))
            if wait > 0:
                return self._leave(plan, 1, _cooling(plan.prepared.profile, wait, plan), None)
        return None

    def cool(self, plan: Plan, error: LLMGenerateError, *, now: bool) -> None:
        """``plan``'s call failed with ``error``: a busy target is left alone by later runs for a
        while. ``now``: whether the failure happened now (a provider batch's answer was made
        earlier and says nothing about now)."""
        if now and error.reason in BUSY_REASONS and self._cooldowns is not None:
            self._cooldowns.cool(cooldown_key(plan), cooldown_for(error.retry_after_s))

    def leaves_on(self, plan: Plan, reason: str | None) -> bool:
        """Whether ``plan``'s profile is left for ``reason``: its ``fallback_on`` lists it and a
        later profile may be tried."""
        return bool(self._names) and reason in plan.fallback_on

    def failed(self, plan: Plan, error: LLMGenerateError, attempt: int) -> Move | None:
        """A generation on ``plan`` failed with ``error``: what comes next when the profile is
        left for it (None: it is not, the failure is the run's; also once text of it reached a
        stream's consumer: a stream that has started never switches)."""
        if not self.leaves_on(plan, error.reason) or error.partial_text:
            return None
        calls = error.attempts or 0
        record = _left(plan, error.code, error.reason or "", error.message, calls)
        record = record.model_copy(
            update={"usage": Usage(llm_calls=calls), "retry_after_s": error.retry_after_s}
        )
        return self._leave(plan, attempt, record, error)

    def invalid(
        self, plan: Plan, verdict: ValidationResult, repairs: int, calls: int, attempt: int
    ) -> Move:
        """``plan``'s profile is left for an output still invalid (``verdict``) after ``repairs``
        repairs, its generations having made ``calls`` HTTP requests (see :meth:`leaves_on`)."""
        issues = verdict.issues
        first = (
            f"; first: {issues[0].path or '/'} fails {issues[0].keyword or 'parse'}"
            if issues
            else ""
        )
        message = (
            f"the output stayed invalid after {repairs} repair(s) "
            f"({len(issues)} issue{'' if len(issues) == 1 else 's'}{first})"
        )
        record = _left(plan, "output_invalid", "invalid_output", message[:300], calls)
        return self._leave(plan, attempt, record, None)

    def prepared(self, current: Plan, step: NextProfile, outcome: object) -> Move:
        """The outcome of ``step``: its plan, generated next (with what is left of the shared
        budget), or why it could not be prepared (recorded; the chain goes on). ``current``: the
        run's current plan."""
        if isinstance(outcome, ScriptoriumError):
            reason = getattr(outcome, "reason", None)
            record = FallbackRecord(
                profile=step.profile,
                code=outcome.code,
                reason=reason if isinstance(reason, str) else outcome.code,
                message=outcome.message,
            )
            self.records.append(record)
            return self._advance(current, step.attempt, step.profile, record.reason)
        if not isinstance(outcome, Plan):
            raise TypeError(f"preparing a profile gives a Plan, not {type(outcome).__name__}")
        plan = outcome
        if self._budget_s is not None:
            spent = (self._clock() - self._started).total_seconds()
            left = self._budget_s - spent
            if left <= 0:
                message = f"not tried: the run's timeout_s of {self._budget_s:g} s was used up"
                self.records.append(_left(plan, "llm_generate", "timeout", message, 0))
                self._names.clear()
                return self._end(current)
            plan = replace(plan, request=plan.request.model_copy(update={"budget_s": left}))
        if self._names and self._cooldowns is not None:
            # A target still cooling down is skipped (recorded) unless it is the last to try.
            wait = self._cooldowns.remaining(cooldown_key(plan))
            if wait > 0:
                self.records.append(_cooling(step.profile, wait, plan))
                skipped = (*step.skipped, step.profile)
                return self._advance(current, step.attempt, step.left, step.reason, skipped)
        self.called = False
        return plan

    def _leave(
        self, plan: Plan, attempt: int, record: FallbackRecord, error: LLMGenerateError | None
    ) -> Move:
        """Leave ``plan``'s profile (``record`` says why) for the next of the chain."""
        self.records.append(record)
        self._left = len(self.records) - 1
        self._error = error
        return self._advance(plan, attempt, record.profile, record.reason)

    def _advance(
        self, plan: Plan, attempt: int, left: str, reason: str, skipped: tuple[str, ...] = ()
    ) -> Move:
        """Ask for the next profile of the chain (whether its target cools down is known once
        it is prepared, :meth:`prepared`); the run ends when none is left."""
        if self._names:
            name = self._names.pop(0)
            origin = self._origin
            assert origin is not None, "a chain is kept only for a plan that has its request"
            return NextProfile(plan, attempt, origin, name, left, reason, skipped)
        return self._end(plan)

    def _end(self, plan: Plan) -> Move:
        """No later profile can be tried: the run ends on the profile left last, which the
        result (or the error raised) reports, so its own record goes. A run whose first profile
        was skipped, cooling down, tries it after all (``plan``, the current one)."""
        if self._left >= 0:
            del self.records[self._left]
            self._left = -1
        if not self.called:
            return plan
        return Ended(self._error)


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
