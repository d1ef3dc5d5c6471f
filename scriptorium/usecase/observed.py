"""The run drivers used when the runner has an observer: the same flow as ``Runner.run`` /
``Runner.arun``, with the run and each call to the model reported to the observer.

Kept apart so the drivers without an observer pay exactly one attribute check for observability.
Observer calls are guarded: an observer that raises is logged at DEBUG and the run goes on, so
watching a run can never change its outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import LLMResponse
from scriptorium.observe import scope as run_scope
from scriptorium.observe.observer import (
    GenerationKind,
    GenerationObservation,
    Observer,
    RunObservation,
)
from scriptorium.usecase.model import RunRequest, RunResult
from scriptorium.usecase.repair import RepairResult

if TYPE_CHECKING:
    from scriptorium.usecase.runner import Runner, _Call, _Plan

__all__ = ["arun_observed", "run_observed"]

#: The first generation read from a provider batch's result instead of a call: ``(plan) -> the
#: checked response`` (see ``Runner.run_answered``).
Answer = Callable[["_Plan"], LLMResponse]

log = logging.getLogger("scriptorium.observe")

T = TypeVar("T")


def _guarded(what: str, fn: Callable[..., T], *args: Any) -> T | None:
    try:
        return fn(*args)
    except Exception:  # observers watch; they never change the outcome
        log.debug("observer failed in %s", what, exc_info=True, extra=run_scope.log_extra())
        return None


class _Watch:
    """One observed run: opens the observation, follows each call, closes it exactly once."""

    def __init__(self, observer: Observer, run_id: str, request: RunRequest) -> None:
        prompt_id = request.prompt_id if isinstance(request, RunRequest) else "?"
        self.run: RunObservation | None = _guarded(
            "start_run", observer.start_run, run_id, prompt_id
        )
        self.scope = run_scope.RunScope(run_id=run_id, prompt_id=prompt_id)
        self.token = run_scope.enter(self.scope)

    def prepared(self, plan: _Plan) -> None:
        self.scope.request_hash = plan.prepared.request_hash
        if self.run is not None:
            _guarded("prepared", self.run.prepared, plan.prepared)

    def call_started(self, call: _Call, *, batch: bool = False) -> GenerationObservation | None:
        if self.run is None:
            return None
        request = getattr(call, "request", None)
        kind: GenerationKind = "batch" if batch else "initial"
        if request is None:  # a repair: the request it repairs
            request = call.context.request  # type: ignore[union-attr]
            kind = "repair"
        generation = _guarded("generation", self.run.generation, kind, request)
        self.scope.generation = generation
        return generation

    def call_ended(
        self,
        generation: GenerationObservation | None,
        outcome: LLMResponse | RepairResult | LLMGenerateError | None,
        error: BaseException | None,
    ) -> None:
        self.scope.generation = None
        if generation is None:
            return
        if isinstance(outcome, RepairResult):
            outcome = outcome.response
        if isinstance(outcome, LLMGenerateError):
            error, outcome = outcome, None
        _guarded("generation end", generation.end, outcome, error)

    def ended(self, result: RunResult | None, error: BaseException | None) -> None:
        run_scope.leave(self.token)
        if self.run is not None:
            _guarded("end", self.run.end, result, error)


def run_observed(
    runner: Runner,
    observer: Observer,
    request: RunRequest,
    run_id: str,
    started: datetime,
    answer: Answer | None = None,
) -> RunResult:
    """``Runner.run`` with an observer; with ``answer``, ``Runner.run_answered`` (the first
    generation is the provider batch's, reported as kind ``batch``)."""
    watch = _Watch(observer, run_id, request)
    try:
        plan = runner._plan(request)
        watch.prepared(plan)
        flow = runner._flow(plan)
        call = next(flow)
        while True:
            generation = watch.call_started(call, batch=answer is not None)
            try:
                if answer is not None:
                    outcome: LLMResponse | RepairResult | LLMGenerateError = answer(plan)
                    answer = None
                else:
                    outcome = runner._call(call, plan)
            except BaseException as err:
                watch.call_ended(generation, None, err)
                raise
            watch.call_ended(generation, outcome, None)
            try:
                call = flow.send(outcome)
            except StopIteration as done:
                result = runner._result(run_id, started, plan, done.value)
                break
    except BaseException as err:
        watch.ended(None, err)
        raise
    watch.ended(result, None)
    return result


async def arun_observed(
    runner: Runner, observer: Observer, request: RunRequest, run_id: str, started: datetime
) -> RunResult:
    """``Runner.arun`` with an observer."""
    watch = _Watch(observer, run_id, request)
    try:
        plan = runner._plan(request)
        watch.prepared(plan)
        flow = runner._flow(plan)
        call = next(flow)
        while True:
            generation = watch.call_started(call)
            try:
                outcome = await runner._acall(call, plan)
            except BaseException as err:
                watch.call_ended(generation, None, err)
                raise
            watch.call_ended(generation, outcome, None)
            try:
                call = flow.send(outcome)
            except StopIteration as done:
                result = runner._result(run_id, started, plan, done.value)
                break
    except BaseException as err:
        watch.ended(None, err)
        raise
    watch.ended(result, None)
    return result
