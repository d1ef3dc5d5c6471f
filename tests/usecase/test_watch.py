"""The observer guard and its null twin: watching never changes an outcome, the end is reported
once, and calls run in the run's log scope."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

import pytest

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import LLMResponse
from scriptorium.observe import scope as run_scope
from scriptorium.testing import FakeClient, FixedClock
from scriptorium.usecase.calls import Callees
from scriptorium.usecase.flow import Generate, Outcome, RunFlow, Step
from scriptorium.usecase.model import RunResult
from scriptorium.usecase.watch import NullWatch, Watch, watch_for
from tests.observe.test_observer import BrokenObserver, HalfBrokenObserver, RecordingObserver
from tests.usecase.plans import GREET, VALIDATOR, plan_of

PLAN = plan_of(GREET)
STEP = Generate(PLAN, 1)
CALLEES = Callees(FakeClient(), None)
HI = LLMResponse(text="Hi!")


def _answer(step: Step, callees: Callees) -> Outcome:
    return HI


async def _aanswer(step: Step, callees: Callees) -> Outcome:
    return HI


def _result() -> RunResult:
    flow = RunFlow(
        PLAN,
        validator=VALIDATOR,
        can_repair=False,
        run_id="run-1",
        started=datetime(2026, 1, 1, tzinfo=UTC),
        clock=FixedClock(),
    )
    flow.send(HI)
    return flow.result()


def test_watch_for_picks_the_null_watch_without_an_observer() -> None:
    assert isinstance(watch_for(None, "run-1", GREET), NullWatch)
    assert isinstance(watch_for(RecordingObserver(), "run-1", GREET), Watch)


@pytest.mark.parametrize("observer", [BrokenObserver(), HalfBrokenObserver()])
def test_a_raising_observer_never_changes_an_outcome(observer: Any) -> None:
    """Every method goes on as if the observer were not there: the call's outcome, the result,
    and the call's own exception all come through unchanged."""
    watch = Watch(observer, "run-1", GREET)
    assert watch.prepared(PLAN) is PLAN
    assert watch.call(STEP, _answer, CALLEES) is HI
    assert asyncio.run(watch.acall(STEP, _aanswer, CALLEES)) is HI
    error = LLMGenerateError("down", reason="server_error")

    def failing(step: Step, callees: Callees) -> Outcome:
        raise error

    with pytest.raises(LLMGenerateError) as caught:
        watch.call(STEP, failing, CALLEES)
    assert caught.value is error
    result = _result()
    assert watch.ended(result) is result
    watch.failed(error)


def test_a_failing_observer_is_logged_with_the_run_named(caplog: pytest.LogCaptureFixture) -> None:
    """The DEBUG record of a failed observer call says which run it was watching."""
    watch = Watch(HalfBrokenObserver(), "run-9", GREET)
    with caplog.at_level(logging.DEBUG, logger="scriptorium.observe"):
        watch.prepared(PLAN)
    (record,) = [r for r in caplog.records if "observer failed" in r.getMessage()]
    assert record.__dict__["run_id"] == "run-9"
    assert record.__dict__["prompt_id"] == "greet"
    assert record.__dict__["request_hash"] == PLAN.prepared.request_hash


def test_the_end_is_reported_exactly_once() -> None:
    """ended then failed, failed twice, or a with block that raises after the end: one end."""
    observer = RecordingObserver()
    watch = Watch(observer, "run-1", GREET)
    watch.ended(_result())
    watch.failed(RuntimeError("late"))
    again = Watch(observer, "run-2", GREET)
    again.failed(RuntimeError("first"))
    again.failed(RuntimeError("second"))

    def end_then_raise() -> None:
        with Watch(observer, "run-3", GREET) as third:
            third.ended(_result())
            raise KeyError("after the end")

    with pytest.raises(KeyError):
        end_then_raise()
    ends = [e for e in observer.journal.events if e[0] == "end"]
    assert ends == [
        ("end", True, "NoneType"),
        ("end", None, "RuntimeError"),
        ("end", True, "NoneType"),
    ]


def test_a_with_block_that_raises_ends_the_run_with_the_error() -> None:
    observer = RecordingObserver()
    with pytest.raises(ValueError, match="prepare failed"), Watch(observer, "run-1", GREET):
        raise ValueError("prepare failed")
    assert observer.journal.events[-1] == ("end", None, "ValueError")


def test_a_failure_while_a_call_is_open_ends_the_call_first() -> None:
    """A stream closed mid-generation: the generation ends with the error, then the run."""
    observer = RecordingObserver()
    watch = Watch(observer, "run-1", GREET)
    watch.prepared(PLAN)
    watch.call_started(STEP)
    watch.failed(LLMGenerateError("closed", reason="cancelled"))
    assert [e[0] for e in observer.journal.events] == [
        "start",
        "prepared",
        "generation",
        "generation_end",
        "end",
    ]
    assert observer.journal.events[-2:] == [
        ("generation_end", None, "LLMGenerateError"),
        ("end", None, "LLMGenerateError"),
    ]


def test_a_failed_call_outcome_ends_the_generation_with_its_error() -> None:
    """A failure returned as an outcome is reported as the call's error, not a response."""
    observer = RecordingObserver()
    watch = Watch(observer, "run-1", GREET)
    failure = LLMGenerateError("down", reason="server_error")

    def failed(step: Step, callees: Callees) -> Outcome:
        return failure

    assert watch.call(STEP, failed, CALLEES) is failure
    assert observer.journal.events[-1] == ("generation_end", None, "LLMGenerateError")


def test_calls_run_in_the_run_scope_with_the_observed_generation() -> None:
    """Inside the call the scope names the run and holds the generation (for retry events);
    after it the scope is gone again."""
    seen: list[run_scope.RunScope | None] = []

    def look(step: Step, callees: Callees) -> Outcome:
        seen.append(run_scope.current_scope())
        return HI

    Watch(RecordingObserver(), "run-1", GREET).call(STEP, look, CALLEES)
    (scope,) = seen
    assert scope is not None
    assert (scope.run_id, scope.prompt_id, scope.request_hash) == (
        "run-1",
        "greet",
        PLAN.prepared.request_hash,
    )
    assert scope.generation is not None
    assert run_scope.current_scope() is None


def test_the_null_watch_only_scopes_calls_when_a_record_could_carry_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No observer: the scope is entered only when the retry logger takes INFO records; every
    other method does nothing but hand its value back."""
    seen: list[run_scope.RunScope | None] = []

    def look(step: Step, callees: Callees) -> Outcome:
        seen.append(run_scope.current_scope())
        return HI

    watch = NullWatch("run-1")
    with caplog.at_level(logging.WARNING, logger="scriptorium.llm.retry"):
        assert watch.call(STEP, look, CALLEES) is HI
    with caplog.at_level(logging.INFO, logger="scriptorium.llm.retry"):
        assert watch.call(STEP, look, CALLEES) is HI
        assert asyncio.run(watch.acall(STEP, _aanswer, CALLEES)) is HI
    assert seen[0] is None
    assert seen[1] is not None
    assert seen[1].run_id == "run-1"
    assert run_scope.current_scope() is None
    result = _result()
    assert watch.prepared(PLAN) is PLAN
    assert watch.ended(result) is result
    watch.call_started(STEP)
    watch.call_ended(HI)
    watch.failed(RuntimeError("ignored"))
    with watch as entered:
        assert entered is watch
