"""A streamed run reports to the runner's observer exactly what run() reports: start, prepared,
each generation (initial, repair) and the end, with failures and early closes as errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scriptorium.errors import LLMGenerateError, PromptLoadError
from scriptorium.testing import FakeClient
from scriptorium.usecase import DefaultOutputRepairer, RunRequest
from tests.conftest import RunnerFactory
from tests.observe.test_observer import BrokenObserver, HalfBrokenObserver, RecordingObserver

GREET = RunRequest(prompt_id="greet", inputs={"name": "Ada"})


def test_a_streamed_run_reports_what_run_reports(make_runner: RunnerFactory) -> None:
    """The same journal, in the same order, as run() gives for the same answer."""
    ran, streamed = RecordingObserver(), RecordingObserver()
    make_runner(client=FakeClient(["Hi there!"]), observer=ran).run(GREET)
    make_runner(client=FakeClient(["Hi there!"]), observer=streamed).stream(GREET).result()
    assert streamed.journal.events == ran.journal.events
    assert [e[0] for e in streamed.journal.events] == [
        "start",
        "prepared",
        "generation",
        "generation_end",
        "end",
    ]


def test_async_stream_and_repair_are_observed(make_runner: RunnerFactory) -> None:
    """astream with a repair: generations initial then repair, and a valid end."""
    observer = RecordingObserver()
    client = FakeClient(["not json", '{"name": "Ada", "email": "ada@example.org"}'])
    runner = make_runner(client=client, observer=observer, repairer=DefaultOutputRepairer(client))
    request = RunRequest(prompt_id="extract/contact", artifacts={"document": "doc.txt"})
    result = asyncio.run(runner.astream(request).result())
    assert result.validation.repaired
    events = observer.journal.events
    assert [e[1] for e in events if e[0] == "generation"] == ["initial", "repair"]
    assert events[-1] == ("end", True, "NoneType")


def test_failures_and_early_closes_end_the_observation(make_runner: RunnerFactory) -> None:
    """A failed call ends generation and run with its error; closing early ends them as
    cancelled; a prepare failure at stream() ends the run without a generation."""
    failed = RecordingObserver()
    failing = LLMGenerateError("down", reason="server_error")
    with pytest.raises(LLMGenerateError):
        make_runner(client=FakeClient([failing]), observer=failed).stream(GREET).result()
    assert failed.journal.events[-2:] == [
        ("generation_end", None, "LLMGenerateError"),
        ("end", None, "LLMGenerateError"),
    ]
    closed = RecordingObserver()
    with make_runner(client=FakeClient(["a long answer"]), observer=closed).stream(GREET) as s:
        next(iter(s))
        next(iter(s))
    assert closed.journal.events[-1] == ("end", None, "LLMGenerateError")
    unprepared = RecordingObserver()
    with pytest.raises(PromptLoadError):
        make_runner(client=FakeClient(["x"]), observer=unprepared).stream(
            RunRequest(prompt_id="nope")
        )
    assert unprepared.journal.events[-1] == ("end", None, "PromptLoadError")


@pytest.mark.parametrize("observer", [BrokenObserver(), HalfBrokenObserver()])
def test_an_observer_that_raises_never_changes_a_stream(
    make_runner: RunnerFactory, observer: Any
) -> None:
    runner = make_runner(client=FakeClient(["Hi!"]), observer=observer)
    assert runner.stream(GREET).result().output.text == "Hi!"
    assert asyncio.run(runner.astream(GREET).result()).output.text == "Hi!"
