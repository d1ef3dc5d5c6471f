"""The row work a test run hands the batch executor: the engine's own, telling the suite about
each outcome as it finishes (the progress line, the running tally), by the request's position."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from scriptorium.errors import ScriptoriumError

if TYPE_CHECKING:
    from scriptorium.batch.work import Recipe, RowWork
    from scriptorium.profile.model import RateLimits
    from scriptorium.usecase.model import PreparedRun, RunRequest, RunResult
    from scriptorium.usecase.plan import Plan

__all__ = ["WatchedRows"]


class WatchedRows:
    """``inner`` (a :class:`~scriptorium.batch.work.RowWork`) whose runs report their outcome to
    ``on_outcome(position, outcome)``, ``position`` being the request's index in ``requests`` (the
    executor hands back the very request objects it was given)."""

    def __init__(
        self,
        inner: RowWork,
        requests: Sequence[RunRequest],
        on_outcome: Callable[[int, RunResult | ScriptoriumError], None],
    ) -> None:
        self._inner = inner
        self._positions = {id(request): index for index, request in enumerate(requests)}
        self._on_outcome = on_outcome

    def prepare(self, request: RunRequest, /) -> PreparedRun:
        return self._inner.prepare(request)

    def plan(self, request: RunRequest, /) -> Plan:
        return self._inner.plan(request)

    def run(self, request: RunRequest, /) -> RunResult:
        return self._watched(request, lambda: self._inner.run(request))

    def run_plan(self, request: RunRequest, plan: Plan, /) -> RunResult:
        return self._watched(request, lambda: self._inner.run_plan(request, plan))

    def _watched(self, request: RunRequest, run: Callable[[], RunResult]) -> RunResult:
        try:
            result = run()
        except ScriptoriumError as err:
            self._tell(request, err)
            raise
        self._tell(request, result)
        return result

    def limits(self, profile: str, /) -> RateLimits | None:
        return self._inner.limits(profile)

    def recipe(self) -> Recipe:
        return self._inner.recipe()

    def _tell(self, request: RunRequest, outcome: RunResult | ScriptoriumError) -> None:
        position = self._positions.get(id(request))
        if position is not None:
            self._on_outcome(position, outcome)
