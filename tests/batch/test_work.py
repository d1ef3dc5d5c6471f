"""The executor seam without an engine: a fake row work (an in-memory runner behind the
``RowWork`` port) driven by the local executor, the limits it reports pacing its rows, and a
recipe that travels through pickle and builds the same work again."""

from __future__ import annotations

import pickle
import threading
import time

import pytest

from scriptorium.batch.executor import run_many
from scriptorium.batch.local import LocalExecutor
from scriptorium.batch.ray import RayExecutor
from scriptorium.batch.work import Recipe, Row, RowWork
from scriptorium.errors import InvalidRequestError, ScriptoriumError
from scriptorium.profile.model import RateLimits
from scriptorium.testing import FakeClient
from scriptorium.usecase import Runner
from scriptorium.usecase.model import PreparedRun, RunRequest, RunResult
from scriptorium.usecase.plan import Plan
from tests.conftest import RunnerFactory


class FakeRows:
    """A ``RowWork`` over a runner: notes what it was asked; its recipe names a builder of a
    fresh one, or refuses to travel."""

    def __init__(
        self,
        runner: Runner,
        limits: dict[str, RateLimits] | None = None,
        *,
        travels: bool = False,
    ) -> None:
        self.runner = runner
        self._limits = limits or {}
        self.travels = travels
        self.ran: list[str] = []
        self.asked_limits: list[str] = []
        self._lock = threading.Lock()

    def prepare(self, request: RunRequest, /) -> PreparedRun:
        return self.runner.prepare(request)

    def plan(self, request: RunRequest, /) -> Plan:
        return self.runner.plan(request)

    def run(self, request: RunRequest, /) -> RunResult:
        with self._lock:
            self.ran.append(str(request.inputs["name"]))
        return self.runner.run(request)

    def run_plan(self, request: RunRequest, plan: Plan, /) -> RunResult:
        with self._lock:
            self.ran.append(str(request.inputs["name"]))
        return self.runner.run_plan(request, plan)

    def limits(self, profile: str, /) -> RateLimits | None:
        self.asked_limits.append(profile)
        return self._limits.get(profile)

    def recipe(self) -> Recipe:
        if not self.travels:
            raise InvalidRequestError("these rows stay in this process", field="executor")
        return Recipe(build_counter, (("start", 5), ("label", "rebuilt")))


class Counter:
    """What :func:`build_counter` builds: enough of a ``RowWork`` to tell it was rebuilt."""

    def __init__(self, start: int, label: str) -> None:
        self.start = start
        self.label = label

    def prepare(self, request: RunRequest, /) -> PreparedRun:
        raise NotImplementedError

    def plan(self, request: RunRequest, /) -> Plan:
        raise NotImplementedError

    def run(self, request: RunRequest, /) -> RunResult:
        raise NotImplementedError

    def run_plan(self, request: RunRequest, plan: Plan, /) -> RunResult:
        raise NotImplementedError

    def limits(self, profile: str, /) -> RateLimits | None:
        return None

    def recipe(self) -> Recipe:
        return Recipe(build_counter, (("start", self.start), ("label", self.label)))


def build_counter(*, start: int, label: str) -> RowWork:
    """A module-level builder: a recipe naming it pickles by reference."""
    return Counter(start, label)


def _greetings(count: int) -> list[RunRequest]:
    return [RunRequest(prompt_id="greet", inputs={"name": f"n{i}"}) for i in range(count)]


def test_the_local_executor_runs_a_fake_row_work_in_input_order(
    make_runner: RunnerFactory,
) -> None:
    rows = FakeRows(make_runner(FakeClient(["hi"])))
    outcomes = run_many(rows, _greetings(5), executor=LocalExecutor(), concurrency=3)
    assert [type(o) for o in outcomes] == [RunResult] * 5
    assert sorted(rows.ran) == [f"n{i}" for i in range(5)]
    # Every row is one profile's: its limits are asked once, and the work never had to travel.
    assert rows.asked_limits == ["offline"]


def test_a_row_that_cannot_be_prepared_fails_in_its_slot_without_reaching_the_work(
    make_runner: RunnerFactory,
) -> None:
    rows = FakeRows(make_runner(FakeClient(["hi"])))
    requests = [*_greetings(1), RunRequest(prompt_id="missing"), *_greetings(1)]
    outcomes = run_many(rows, requests, executor=LocalExecutor(), concurrency=2)
    assert isinstance(outcomes[0], RunResult)
    assert isinstance(outcomes[1], ScriptoriumError)
    assert isinstance(outcomes[2], RunResult)
    assert rows.ran == ["n0", "n0"]


def test_the_limits_the_work_reports_pace_its_rows(make_runner: RunnerFactory) -> None:
    """300 a minute over a 0.2 s window is one row a window: three rows take two windows."""
    rows = FakeRows(
        make_runner(FakeClient(["hi"])), {"offline": RateLimits(requests_per_minute=300)}
    )
    started = time.monotonic()
    outcomes = run_many(
        rows,
        _greetings(3),
        executor=LocalExecutor(window_s=0.2, margin_s=0.02),
        concurrency=3,
    )
    assert all(isinstance(o, RunResult) for o in outcomes)
    assert time.monotonic() - started >= 0.4


def test_each_row_is_delivered_once_with_its_own_row(make_runner: RunnerFactory) -> None:
    rows = FakeRows(make_runner(FakeClient(["hi"])))
    prepared = [Row(i, r, rows.prepare(r)) for i, r in enumerate(_greetings(4))]
    seen: list[int] = []
    lock = threading.Lock()

    def deliver(row: Row, outcome: RunResult | ScriptoriumError) -> None:
        assert isinstance(outcome, RunResult)
        with lock:
            seen.append(row.index)

    LocalExecutor().execute(rows, prepared, deliver, concurrency=2)
    assert sorted(seen) == [0, 1, 2, 3]


def test_a_recipe_round_trips_through_pickle_and_builds_the_same_work() -> None:
    recipe = Counter(5, "rebuilt").recipe()
    copy = pickle.loads(pickle.dumps(recipe))
    assert copy == recipe
    assert hash(copy) == hash(recipe)
    work = copy.rebuild()
    assert isinstance(work, Counter)
    assert (work.start, work.label) == (5, "rebuilt")


def test_the_ray_executor_asks_for_the_recipe_before_anything_else(
    make_runner: RunnerFactory,
) -> None:
    """Work that cannot travel is refused before Ray is imported or a cluster started."""
    rows = FakeRows(make_runner(FakeClient(["hi"])))
    prepared = [Row(0, r, rows.prepare(r)) for r in _greetings(1)]
    with pytest.raises(InvalidRequestError, match="stay in this process"):
        RayExecutor().execute(rows, prepared, lambda row, outcome: None, concurrency=1)
    assert rows.ran == []
