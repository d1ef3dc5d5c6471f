"""Watching a run: what its observer is told, and the log scope its calls run in.

Every driver holds one of two objects with the same methods, so none of them asks whether there is
an observer: a :class:`Watch` reports the run to the observer (start, prepared, each call started
and ended, the end exactly once), every observer call guarded so that an observer that raises is
logged at DEBUG and never changes the outcome; a :class:`NullWatch` does nothing but the log scope.
:func:`watch_for` picks one, which is the only "is there an observer" check of a run.

The log scope (``observe.scope``: the run id on the retry loop's log records, and the observed
generation, so transport retries become events of it) is entered around each call to the model
and left when the call returns, never across a ``yield`` to a stream's consumer: a context
variable set across a yield would stay set in the consumer's code between events. A watch's own
log records (an observer that failed, the run's DEBUG line) name the run explicitly.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from contextvars import Token
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import LLMResponse
from scriptorium.llm.report import CallReport
from scriptorium.observe import scope as run_scope
from scriptorium.observe.observer import GenerationObservation, Observer, RunObservation
from scriptorium.usecase.fallback import NextProfile
from scriptorium.usecase.flow import Outcome, Step
from scriptorium.usecase.model import PreparedRun, RunRequest, RunResult
from scriptorium.usecase.plan import Plan
from scriptorium.usecase.repair import RepairResult

if TYPE_CHECKING:
    from scriptorium.usecase.calls import Callees

__all__ = ["NullWatch", "RunWatch", "Watch", "watch_for"]

log = logging.getLogger("scriptorium.observe")
# The one line per run, at DEBUG.
_runs_log = logging.getLogger("scriptorium.runner")

T = TypeVar("T")

#: Makes a step: ``calls.call`` (the async drivers pass ``calls.acall`` to ``acall``).
Make = Callable[[Step, "Callees"], Outcome]
AsyncMake = Callable[[Step, "Callees"], Awaitable[Outcome]]


class NullWatch:
    """A run nobody observes: its calls run in the run's log scope (when a log record could carry
    it), and its end is one DEBUG line; nothing else."""

    __slots__ = ("_run_id",)

    def __init__(self, run_id: str) -> None:
        self._run_id = run_id

    def __enter__(self) -> NullWatch:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    def prepared(self, plan: Plan) -> Plan:
        """``plan``, once preparation succeeded."""
        return plan

    def call_started(self, step: Step) -> None:
        """A call of ``step`` starts."""

    def call_ended(self, outcome: Outcome | None, error: BaseException | None = None) -> None:
        """The call started last gave ``outcome`` or raised ``error``."""

    def scope(self, step: Step) -> _LogScope:
        """The run's log scope, for a ``with`` around a call of ``step``."""
        return _LogScope(self._run_id, step.plan.prepared)

    def call(self, step: Step, make: Make, callees: Callees) -> Outcome:
        """``make(step, callees)`` in the run's log scope."""
        prepared = step.plan.prepared
        token = run_scope.enter_for_logs(self._run_id, prepared.prompt_id, prepared.request_hash)
        if token is None:
            return make(step, callees)
        try:
            return make(step, callees)
        finally:
            run_scope.leave(token)

    async def acall(self, step: Step, make: AsyncMake, callees: Callees) -> Outcome:
        """The async twin of :meth:`call`."""
        with self.scope(step):
            return await make(step, callees)

    def ended(self, result: RunResult) -> RunResult:
        """The run ended with ``result`` (returned as it is)."""
        _log_run(result)
        return result

    def failed(self, error: BaseException) -> None:
        """The run ended with ``error``."""


class Watch:
    """An observed run: opens the observation, follows each call, closes it exactly once, and
    guards every observer call."""

    __slots__ = ("_generation", "_open", "_prompt_id", "_request_hash", "_run", "_run_id")

    def __init__(self, observer: Observer, run_id: str, request: object) -> None:
        self._run_id = run_id
        self._prompt_id = request.prompt_id if isinstance(request, RunRequest) else "?"
        self._request_hash: str | None = None
        self._generation: GenerationObservation | None = None
        self._open = True
        self._run: RunObservation | None = None
        self._run = self._guarded("start_run", observer.start_run, run_id, self._prompt_id)

    def __enter__(self) -> Watch:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        if err is not None:
            self.failed(err)

    def prepared(self, plan: Plan) -> Plan:
        """Tell the observer the run is prepared; ``plan`` is returned."""
        self._request_hash = plan.prepared.request_hash
        if self._run is not None:
            self._guarded("prepared", self._run.prepared, plan.prepared)
        return plan

    def call_started(self, step: Step) -> None:
        """Open the observation of a call of ``step`` (its kind and request); preparing the next
        profile of a fallback chain is no call to the model, and is not observed."""
        if self._run is not None and not isinstance(step, NextProfile):
            self._generation = self._guarded(
                "generation", self._run.generation, step.kind, step.request
            )

    def call_ended(self, outcome: Outcome | None, error: BaseException | None = None) -> None:
        """Close the observation of the call in progress with its response or its failure (a
        failed call's outcome is its error)."""
        generation, self._generation = self._generation, None
        if generation is None:
            return
        if isinstance(outcome, RepairResult):
            outcome = outcome.response
        if isinstance(outcome, LLMGenerateError):
            outcome, error = None, outcome
        response = outcome if isinstance(outcome, LLMResponse) else None
        self._guarded("generation end", generation.end, response, error)

    def scope(self, step: Step) -> _Scope:
        """The run's log scope with the observed call, for a ``with`` around a call of ``step``."""
        prepared = step.plan.prepared
        return _Scope(
            run_scope.RunScope(
                self._run_id, prepared.prompt_id, prepared.request_hash, self._generation
            )
        )

    def call(self, step: Step, make: Make, callees: Callees) -> Outcome:
        """``make(step, callees)``, observed, in the run's log scope."""
        self.call_started(step)
        try:
            with self.scope(step):
                outcome = make(step, callees)
        except BaseException as err:
            self.call_ended(None, err)
            raise
        self.call_ended(outcome)
        return outcome

    async def acall(self, step: Step, make: AsyncMake, callees: Callees) -> Outcome:
        """The async twin of :meth:`call`."""
        self.call_started(step)
        try:
            with self.scope(step):
                outcome = await make(step, callees)
        except BaseException as err:
            self.call_ended(None, err)
            raise
        self.call_ended(outcome)
        return outcome

    def ended(self, result: RunResult) -> RunResult:
        """Close the observation with ``result`` (returned as it is), unless it is closed."""
        if self._open:
            self._open = False
            _log_run(result)
            if self._run is not None:
                self._guarded("end", self._run.end, result, None)
        return result

    def failed(self, error: BaseException) -> None:
        """Close the observation with ``error`` (a call still open ends with it first), unless it
        is closed."""
        if not self._open:
            return
        self._open = False
        if self._generation is not None:
            self.call_ended(None, error)
        if self._run is not None:
            self._guarded("end", self._run.end, None, error)

    def _guarded(self, what: str, fn: Callable[..., T], *args: Any) -> T | None:
        try:
            return fn(*args)
        except Exception:  # observers watch; they never change the outcome
            extra = {
                "run_id": self._run_id,
                "prompt_id": self._prompt_id,
                "request_hash": self._request_hash,
            }
            log.debug("observer failed in %s", what, exc_info=True, extra=extra)
            return None


#: What a driver holds: one of the two, with the same methods.
RunWatch = Watch | NullWatch


def watch_for(observer: Observer | None, run_id: str, request: object) -> RunWatch:
    """The watch of run ``run_id`` of ``request``: a :class:`Watch` on ``observer``, or a
    :class:`NullWatch` when there is none. Starts the observation."""
    return NullWatch(run_id) if observer is None else Watch(observer, run_id, request)


class _LogScope:
    """The log scope of a call nobody observes: entered only when a record could carry it."""

    __slots__ = ("_prepared", "_run_id", "_token")

    def __init__(self, run_id: str, prepared: PreparedRun) -> None:
        self._run_id = run_id
        self._prepared = prepared
        self._token: Token[CallReport | None] | None = None

    def __enter__(self) -> None:
        prepared = self._prepared
        self._token = run_scope.enter_for_logs(
            self._run_id, prepared.prompt_id, prepared.request_hash
        )

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            run_scope.leave(self._token)


class _Scope:
    """The log scope of an observed call."""

    __slots__ = ("_scope", "_token")

    def __init__(self, scope: run_scope.RunScope) -> None:
        self._scope = scope
        self._token: Token[CallReport | None] | None = None

    def __enter__(self) -> None:
        self._token = run_scope.enter(self._scope)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            run_scope.leave(self._token)


def _log_run(result: RunResult) -> None:
    if not _runs_log.isEnabledFor(logging.DEBUG):
        return
    prepared = result.prepared
    extra: Mapping[str, object] = {
        "run_id": result.run_id,
        "prompt_id": prepared.prompt_id,
        "request_hash": prepared.request_hash,
    }
    _runs_log.debug(
        "run %s prompt=%s valid=%s attempts=%d llm_calls=%d",
        result.run_id,
        prepared.prompt_id,
        result.validation.valid,
        len(result.attempts),
        result.usage.llm_calls,
        extra=extra,
    )
