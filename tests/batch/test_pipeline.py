"""The bounded batch pipeline: rows read only as fast as outcomes leave, each prepared once, given
back in input order through a window that a slow row holds. The shapes are counted (rows pulled
against outcomes given back, live plans), never timed."""

from __future__ import annotations

import asyncio
import gc
import io
import shutil
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from scriptorium._journal import Journal
from scriptorium.batch.aio import arun_ordered
from scriptorium.batch.executor import run_many
from scriptorium.batch.local import LocalExecutor
from scriptorium.batch.pipeline import ReorderWindow, window_size
from scriptorium.batch.work import Recipe
from scriptorium.cli.batch import run_lines
from scriptorium.cli.batch_records import Item, Record
from scriptorium.errors import InvalidRequestError, ScriptoriumError
from scriptorium.profile.model import RateLimits
from scriptorium.testing import FakeClient
from scriptorium.usecase import Runner
from scriptorium.usecase.model import PreparedRun, RunRequest, RunResult
from scriptorium.usecase.plan import Plan
from tests.conftest import RunnerFactory


class CountingRows:
    """A ``RowWork`` over a runner that counts how it is used; a row named in ``hold`` waits for
    ``release`` before it runs."""

    def __init__(self, runner: Runner, hold: frozenset[str] = frozenset()) -> None:
        self.runner = runner
        self.hold = hold
        self.release = threading.Event()
        self.planned = 0
        self.prepared = 0
        self.ran_from_request = 0
        self.ran_from_plan = 0
        self._lock = threading.Lock()

    def prepare(self, request: RunRequest, /) -> PreparedRun:
        with self._lock:
            self.prepared += 1
        return self.runner.prepare(request)

    def plan(self, request: RunRequest, /) -> Plan:
        with self._lock:
            self.planned += 1
        return self.runner.plan(request)

    def run(self, request: RunRequest, /) -> RunResult:
        with self._lock:
            self.ran_from_request += 1
        return self.runner.run(request)

    def run_plan(self, request: RunRequest, plan: Plan, /) -> RunResult:
        if request.inputs["name"] in self.hold:
            assert self.release.wait(10), "the held row was never released"
        with self._lock:
            self.ran_from_plan += 1
        return self.runner.run_plan(request, plan)

    def limits(self, profile: str, /) -> RateLimits | None:
        return None

    def recipe(self) -> Recipe:
        raise InvalidRequestError("these rows stay in this process", field="executor")


class Requests:
    """A generator of greetings that counts how many were pulled."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.pulled = 0

    def __iter__(self) -> Iterator[RunRequest]:
        for i in range(self.count):
            self.pulled += 1
            yield RunRequest(prompt_id="greet", inputs={"name": f"n{i}"})


def _name(outcome: RunResult | ScriptoriumError) -> str:
    assert isinstance(outcome, RunResult), outcome
    content = outcome.prepared.messages[-1].content
    assert isinstance(content, str)
    return content.removeprefix("Hello ").removesuffix("!")


def _live_plans() -> int:
    return sum(1 for o in gc.get_objects() if isinstance(o, Plan))


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


def test_the_window_gives_outcomes_back_in_input_order_whatever_order_they_come_in() -> None:
    emitted: list[int] = []
    window: ReorderWindow[int] = ReorderWindow(4, emitted.append)
    for index in (2, 1, 3):
        window.put(index, index)
    assert emitted == []
    assert window.held == 3
    window.put(0, 0)
    assert emitted == [0, 1, 2, 3]
    assert window.held == 0
    assert window.released == 4


def test_a_full_window_makes_the_reader_wait_until_the_oldest_row_is_out() -> None:
    window: ReorderWindow[int] = ReorderWindow(2, lambda _: None)
    assert window.admit(0)
    assert window.admit(1)
    admitted = threading.Event()

    def reader() -> None:
        window.admit(2)
        admitted.set()

    thread = threading.Thread(target=reader)
    thread.start()
    window.put(1, 1)  # a later row finishing makes no room: row 0 still holds the window
    assert not admitted.wait(0.2)
    window.put(0, 0)
    assert admitted.wait(10)
    thread.join()


def test_a_stopped_window_admits_nothing_more() -> None:
    window: ReorderWindow[int] = ReorderWindow(1, lambda _: None)
    assert window.admit(0)
    window.stop()
    assert window.admit(1) is False


def test_run_many_given_a_generator_yields_in_order_holding_a_bounded_window(
    make_runner: RunnerFactory,
) -> None:
    work = CountingRows(make_runner(FakeClient(["hi"])))
    requests = Requests(400)
    bound = window_size(4)
    names: list[str] = []
    most_plans = 0
    outcomes = run_many(work, iter(requests), executor=LocalExecutor(), concurrency=4)
    assert isinstance(outcomes, Iterator)
    for taken, outcome in enumerate(outcomes, start=1):
        names.append(_name(outcome))
        # Requests pulled but not yet given back: the rows in flight and those waiting for an
        # earlier one, plus the one the reader holds while it waits for room.
        assert requests.pulled - taken <= bound + 1
        if taken % 50 == 0:
            most_plans = max(most_plans, _live_plans())
    assert names == [f"n{i}" for i in range(400)]
    assert most_plans <= bound + 1


def test_each_row_is_prepared_once_and_run_from_that_plan(make_runner: RunnerFactory) -> None:
    work = CountingRows(make_runner(FakeClient(["hi"])))
    outcomes = list(run_many(work, iter(Requests(30)), executor=LocalExecutor(), concurrency=3))
    assert len(outcomes) == 30
    assert (work.planned, work.prepared) == (30, 0)
    assert (work.ran_from_plan, work.ran_from_request) == (30, 0)
    listed = run_many(work, list(Requests(5)), executor=LocalExecutor(), concurrency=2)
    assert isinstance(listed, list)
    assert [_name(o) for o in listed] == [f"n{i}" for i in range(5)]
    assert (work.planned, work.ran_from_plan, work.ran_from_request) == (35, 35, 0)


def test_a_slow_row_holds_the_window_and_then_everything_it_held_comes_out(
    make_runner: RunnerFactory,
) -> None:
    work = CountingRows(make_runner(FakeClient(["hi"])), hold=frozenset({"n0"}))
    requests = Requests(200)
    bound = window_size(2)
    outcomes = run_many(work, iter(requests), executor=LocalExecutor(), concurrency=2)
    first: list[RunResult | ScriptoriumError] = []
    taker = threading.Thread(target=lambda: first.append(next(outcomes)))
    taker.start()
    # The reader fills the window behind the held row, then waits: it reads no further.
    _wait_for(lambda: work.ran_from_plan == bound - 1, "the rows behind the held one")
    time.sleep(0.2)
    assert requests.pulled == bound + 1
    assert work.ran_from_plan == bound - 1
    work.release.set()
    taker.join()
    rest = list(outcomes)
    assert [_name(o) for o in first + rest] == [f"n{i}" for i in range(200)]


def test_stopping_early_stops_the_reading(make_runner: RunnerFactory) -> None:
    work = CountingRows(make_runner(FakeClient(["hi"])))
    requests = Requests(100_000)
    outcomes = run_many(work, iter(requests), executor=LocalExecutor(), concurrency=4)
    assert isinstance(outcomes, Iterator)
    taken = [_name(next(outcomes)) for _ in range(3)]
    outcomes.close()  # type: ignore[attr-defined]  # run_many's iterator is a generator
    assert taken == ["n0", "n1", "n2"]
    assert requests.pulled <= window_size(4) + 4


def test_arun_ordered_yields_in_order_with_bounded_reading_and_flight() -> None:
    flight = 0
    most_flight = 0
    requests = Requests(300)

    async def run(request: RunRequest) -> RunResult:
        nonlocal flight, most_flight
        flight += 1
        most_flight = max(most_flight, flight)
        # Later rows finish first now and then: order must still come out right.
        await asyncio.sleep(0.002 if int(str(request.inputs["name"])[1:]) % 7 else 0.01)
        flight -= 1
        raise InvalidRequestError(str(request.inputs["name"]))

    async def main() -> list[str]:
        names: list[str] = []
        taken = 0
        async for outcome in arun_ordered(run, iter(requests), concurrency=5):
            taken += 1
            assert requests.pulled - taken <= window_size(5)
            assert isinstance(outcome, InvalidRequestError)
            names.append(outcome.message)
        return names

    assert asyncio.run(main()) == [f"n{i}" for i in range(300)]
    assert most_flight <= 5


def test_arun_ordered_takes_an_async_iterator_and_cancels_what_it_held_when_left() -> None:
    started: list[str] = []
    cancelled: list[str] = []

    async def run(request: RunRequest) -> RunResult:
        name = str(request.inputs["name"])
        started.append(name)
        try:
            await asyncio.sleep(0 if name == "n0" else 10)
        except asyncio.CancelledError:
            cancelled.append(name)
            raise
        raise InvalidRequestError(name)

    async def source() -> AsyncIterator[RunRequest]:
        for request in Requests(1000):
            yield request

    async def main() -> None:
        outcomes = arun_ordered(run, source(), concurrency=3)
        first = await outcomes.__anext__()
        assert isinstance(first, InvalidRequestError)
        assert first.message == "n0"
        await outcomes.aclose()

    asyncio.run(main())
    assert len(started) <= 4
    assert sorted(cancelled) == sorted(started[1:])


def test_the_command_s_lines_are_read_only_as_fast_as_records_are_written(
    make_runner: RunnerFactory, tmp_path: Path
) -> None:
    """``scriptorium batch``'s pipeline over a fake row work: lines pulled minus records written
    never exceed the window, each line is prepared once, a line answered earlier is copied."""
    work = CountingRows(make_runner(FakeClient(["hi"])))
    written = io.StringIO()
    pulled = 0
    bound = window_size(3)
    most_ahead = 0

    def items() -> Iterator[Item]:
        nonlocal pulled, most_ahead
        for i in range(500):
            pulled += 1
            most_ahead = max(most_ahead, pulled - written.getvalue().count("\n"))
            request = RunRequest(prompt_id="greet", inputs={"name": f"n{i % 250}"})
            yield Item(i + 1, i, request=request)

    earlier = work.plan(RunRequest(prompt_id="greet", inputs={"name": "n7"})).prepared
    done: dict[str, Record] = {earlier.request_hash: {"line": 99, "result": {"x": 1}}}
    with Journal(tmp_path / "journal") as journal:
        count, resumed = run_lines(
            work,
            items(),
            done=done,
            journal=journal,
            executor=LocalExecutor(),
            concurrency=3,
            sink=written,
            on_done=lambda record: None,
        )
    assert (count, resumed) == (500, 2)
    assert most_ahead <= bound + 1
    lines = written.getvalue().splitlines()
    assert len(lines) == 500
    assert [int(line.split('"line": ')[1].split(",")[0]) for line in lines] == list(range(1, 501))
    assert work.planned == 500 + 1  # every line once, and the earlier result's hash above
    assert (work.ran_from_plan, work.ran_from_request, work.prepared) == (498, 0, 0)


@pytest.mark.parametrize("concurrency", [1, 8])
def test_an_engine_s_run_many_and_arun_many_stream_a_generator(
    concurrency: int, tmp_path: Path
) -> None:
    from scriptorium import Engine
    from tests.engine.test_engine import GOOD, REPO

    shutil.copytree(REPO / "prompts", tmp_path / "prompts")
    shutil.copytree(REPO / "profiles", tmp_path / "profiles")
    for i in range(40):
        (tmp_path / f"card{i}.txt").write_text(f"Ada {i}, ada@example.com\n", encoding="utf-8")
    engine = Engine(tmp_path, client=FakeClient([GOOD]))

    def requests() -> Iterator[RunRequest]:
        for i in range(40):
            yield RunRequest(prompt_id="extract/contact", artifacts={"document": f"card{i}.txt"})

    expected = [engine.prepare(r).request_hash for r in requests()]

    def hashes(outcomes: list[RunResult | ScriptoriumError]) -> list[str]:
        return [o.prepared.request_hash for o in outcomes if isinstance(o, RunResult)]

    streamed = engine.run_many(requests(), concurrency=concurrency)
    assert isinstance(streamed, Iterator)
    assert hashes(list(streamed)) == expected

    async def main() -> list[RunResult | ScriptoriumError]:
        outcomes = await engine.arun_many(requests(), concurrency=concurrency)
        assert isinstance(outcomes, AsyncIterator)
        return [o async for o in outcomes]

    assert hashes(asyncio.run(main())) == expected
    listed = asyncio.run(engine.arun_many(list(requests()), concurrency=concurrency))
    assert isinstance(listed, list)
    assert hashes(listed) == expected
