"""Runner.stream / astream with in-process clients: the events, the result, errors and repair."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from pydantic import TypeAdapter

from scriptorium import errors
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.llm.streaming import StreamItem
from scriptorium.testing import FakeClient
from scriptorium.usecase import (
    AttemptStarted,
    DefaultOutputRepairer,
    Done,
    PartialValue,
    RepairContext,
    RepairResult,
    RunRequest,
    RunResult,
    StreamEvent,
    TextDelta,
)
from tests.comparable import comparable
from tests.conftest import RunnerFactory

CONTACT = RunRequest(prompt_id="extract/contact", artifacts={"document": "doc.txt"})
GREET = RunRequest(prompt_id="greet", inputs={"name": "Ada"})
GOOD = '{"name": "Ada Lovelace", "email": "ada@example.com"}'


def _texts(events: list[StreamEvent], attempt: int = 1) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta) and e.attempt == attempt)


def test_events_deltas_partials_and_done(make_runner: RunnerFactory) -> None:
    """A JSON run says attempt 1 began, streams deltas adding up to the output, partial values
    that grow to the validated value, and ends with Done."""
    response = LLMResponse(text=GOOD, usage=Usage(input_tokens=10, output_tokens=5))
    runner = make_runner(FakeClient([response], chunks=8))
    with runner.stream(CONTACT) as stream:
        events = list(stream)
    assert events[0] == AttemptStarted(attempt=1, kind="initial")
    assert isinstance(events[-1], Done)
    result = events[-1].result
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1
    assert _texts(events) == result.output.text == GOOD
    partials = [e.value for e in events if isinstance(e, PartialValue)]
    assert partials[-1] == result.validation.value == json.loads(GOOD)
    assert {} in partials
    assert {"name": "Ada Lovelace"} in partials
    for before, after in itertools.pairwise(partials):
        assert before != after
        assert all(after.get(k) == v for k, v in before.items())
    assert stream.result() == result


def test_stream_result_equals_run_result(make_runner: RunnerFactory) -> None:
    """stream.result() is the RunResult run() gives for the same response, field for field."""
    response = LLMResponse(
        text=GOOD, model="m-1", usage=Usage(input_tokens=7, output_tokens=3, cost_micro=12)
    )
    ran = make_runner(FakeClient([response])).run(CONTACT)
    streamed = make_runner(FakeClient([response])).stream(CONTACT).result()
    assert comparable(streamed) == comparable(ran)
    assert streamed.run_id == ran.run_id == "run-1"


def test_text_output_has_no_partial_values(make_runner: RunnerFactory) -> None:
    """Partial values are for JSON outputs only; a text prompt streams deltas alone."""
    runner = make_runner(FakeClient(["Hello there, Ada! How are you?"]))
    events = list(runner.stream(GREET))
    assert not [e for e in events if isinstance(e, PartialValue)]
    assert _texts(events) == "Hello there, Ada! How are you?"


def test_client_without_stream_is_one_chunk(make_runner: RunnerFactory) -> None:
    """A client with only generate() streams its whole answer as one delta."""

    class Plain:
        def generate(self, request: LLMRequest) -> LLMResponse:
            return LLMResponse(text=GOOD)

    events = list(make_runner(Plain()).stream(CONTACT))
    assert [e.text for e in events if isinstance(e, TextDelta)] == [GOOD]
    assert isinstance(events[-1], Done)
    assert events[-1].result.validation.valid


def test_failure_after_first_delta_carries_partial_text(make_runner: RunnerFactory) -> None:
    """A client failing mid-stream surfaces as LLMGenerateError with the text delivered so far."""

    class Broken:
        def generate(self, request: LLMRequest) -> LLMResponse:
            raise AssertionError("not called")

        def stream(self, request: LLMRequest) -> Iterator[StreamItem]:
            yield '{"name": '
            yield '"Ada'
            raise ConnectionResetError("peer went away")

    stream = make_runner(Broken()).stream(CONTACT)
    seen: list[StreamEvent] = []

    def read() -> None:
        for event in stream:
            seen.append(event)

    with pytest.raises(errors.LLMGenerateError) as caught:
        read()
    assert caught.value.partial_text == '{"name": "Ada'
    assert isinstance(caught.value.__cause__, ConnectionResetError)
    assert _texts(seen) == '{"name": "Ada'
    with pytest.raises(errors.LLMGenerateError):
        stream.result()


def test_failure_before_any_text_has_no_partial_text(make_runner: RunnerFactory) -> None:
    """A scripted failure raised before the first chunk leaves partial_text unset."""
    failure = errors.LLMGenerateError("overloaded", reason="overloaded", retryable=True)
    stream = make_runner(FakeClient([failure])).stream(CONTACT)
    with pytest.raises(errors.LLMGenerateError) as caught:
        stream.result()
    assert caught.value.partial_text is None
    assert caught.value.prompt_id == "extract/contact"


def test_repair_is_announced_and_streamed(make_runner: RunnerFactory) -> None:
    """An invalid first answer is repaired after the stream: AttemptStarted(repair), the repair's
    text and value, and a result equal to run()'s."""
    script = ['{"name": "Ada"}', GOOD]
    client = FakeClient(script)
    runner = make_runner(client, repairer=DefaultOutputRepairer(client))
    events = list(runner.stream(CONTACT))
    starts = [e for e in events if isinstance(e, AttemptStarted)]
    assert starts == [
        AttemptStarted(attempt=1, kind="initial"),
        AttemptStarted(attempt=2, kind="repair"),
    ]
    assert _texts(events, 1) == '{"name": "Ada"}'
    assert _texts(events, 2) == GOOD
    last = [e for e in events if isinstance(e, PartialValue)][-1]
    assert last.attempt == 2
    assert last.value == json.loads(GOOD)
    done = events[-1]
    assert isinstance(done, Done)
    other = FakeClient(script)
    ran = make_runner(other, repairer=DefaultOutputRepairer(other)).run(CONTACT)
    assert comparable(done.result) == comparable(ran)
    assert done.result.validation.repaired


def test_lenient_output_ends_at_the_validated_value(make_runner: RunnerFactory) -> None:
    """Prose and a fence around the JSON: the last partial value is still validation.value."""
    text = f"Here it is:\n```json\n{GOOD}\n```"
    events = list(make_runner(FakeClient([text])).stream(CONTACT))
    done = events[-1]
    assert isinstance(done, Done)
    assert done.result.validation.valid
    partials = [e.value for e in events if isinstance(e, PartialValue)]
    assert partials[-1] == done.result.validation.value


def test_closing_early_stops_the_client_stream(make_runner: RunnerFactory) -> None:
    """Leaving the with block closes the client's stream; result() then fails as cancelled."""
    closed: list[bool] = []

    class Endless:
        def generate(self, request: LLMRequest) -> LLMResponse:
            raise AssertionError("not called")

        def stream(self, request: LLMRequest) -> Iterator[StreamItem]:
            try:
                while True:
                    yield "word "
            finally:
                closed.append(True)

    with make_runner(Endless()).stream(GREET) as stream:
        for event in stream:
            if isinstance(event, TextDelta):
                break
    assert closed == [True]
    with pytest.raises(errors.LLMGenerateError) as caught:
        stream.result()
    assert caught.value.reason == "cancelled"


def test_prepare_errors_raise_when_the_stream_is_made(make_runner: RunnerFactory) -> None:
    """A bad request fails at stream(), before any call."""
    client = FakeClient([GOOD])
    with pytest.raises(errors.PromptLoadError):
        make_runner(client).stream(RunRequest(prompt_id="missing"))
    assert client.calls == 0


def test_events_round_trip_through_json(make_runner: RunnerFactory) -> None:
    """Every event has a JSON form discriminated by type that reads back to the same event."""
    adapter: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)
    events = list(make_runner(FakeClient([GOOD])).stream(CONTACT))
    assert {e.type for e in events} == {"attempt_started", "text_delta", "partial_value", "done"}
    for event in events:
        assert adapter.validate_json(event.model_dump_json()) == event


def test_async_twin_gives_the_same_events(make_runner: RunnerFactory) -> None:
    """astream yields the same events and result as stream."""
    sync_events = list(make_runner(FakeClient([GOOD])).stream(CONTACT))

    async def collect() -> list[StreamEvent]:
        async with make_runner(FakeClient([GOOD])).astream(CONTACT) as stream:
            events = [e async for e in stream]
            assert await stream.result() == events[-1].result  # type: ignore[union-attr]
        return events

    async_events = asyncio.run(collect())
    assert async_events == sync_events


def test_async_stream_of_async_only_client(make_runner: RunnerFactory) -> None:
    """An async client with astream streams; awaiting astream() gives the stream too."""

    class AsyncOnly:
        async def agenerate(self, request: LLMRequest) -> LLMResponse:
            raise AssertionError("not called")

        async def astream(self, request: LLMRequest) -> AsyncIterator[StreamItem]:
            for piece in ('{"name": "Ada Lovelace", ', '"email": "ada@example.com"}'):
                yield piece

    async def run() -> RunResult:
        stream = await make_runner(AsyncOnly()).astream(CONTACT)
        return await stream.result()

    result = asyncio.run(run())
    assert result.validation.valid
    assert result.output.text == GOOD


def test_async_failure_after_first_delta(make_runner: RunnerFactory) -> None:
    """The async driver also fills in partial_text."""

    class Broken:
        async def agenerate(self, request: LLMRequest) -> LLMResponse:
            raise AssertionError("not called")

        async def astream(self, request: LLMRequest) -> AsyncIterator[StreamItem]:
            yield "Hel"
            raise errors.LLMGenerateError("cut", reason="connection")

    async def run() -> None:
        async with make_runner(Broken()).astream(GREET) as stream:
            async for _ in stream:
                pass

    with pytest.raises(errors.LLMGenerateError) as caught:
        asyncio.run(run())
    assert caught.value.partial_text == "Hel"


def test_the_default_repairer_streams_the_repair(make_runner: RunnerFactory) -> None:
    """The repair's text arrives in several deltas of attempt 2, through the same client."""
    client = FakeClient(['{"name": "Ada"}', GOOD], chunks=4)
    runner = make_runner(client, repairer=DefaultOutputRepairer(client))
    events = list(runner.stream(CONTACT))
    repair_deltas = [e for e in events if isinstance(e, TextDelta) and e.attempt == 2]
    assert len(repair_deltas) == 4
    assert "".join(d.text for d in repair_deltas) == GOOD


def test_a_failed_repair_is_reported_as_run_reports_it(make_runner: RunnerFactory) -> None:
    """A repair call that fails ends the repairs with a repair_failed issue, streamed or not."""
    script: list[Any] = [
        '{"name": "Ada"}',
        errors.LLMGenerateError("down", reason="server_error", attempts=1),
    ]
    ran_client, streamed_client = FakeClient(script), FakeClient(script)
    ran = make_runner(ran_client, repairer=DefaultOutputRepairer(ran_client)).run(CONTACT)
    streamed = (
        make_runner(streamed_client, repairer=DefaultOutputRepairer(streamed_client))
        .stream(CONTACT)
        .result()
    )
    assert any(i.keyword == "repair_failed" for i in streamed.validation.issues)
    assert comparable(streamed) == comparable(ran)


def test_a_repairer_without_stream_gives_its_text_in_one_delta(make_runner: RunnerFactory) -> None:
    """A custom repairer with only repair(): the repaired text is one delta of attempt 2."""

    class Fixer:
        def repair(self, context: RepairContext) -> RepairResult:
            return RepairResult(response=LLMResponse(text=GOOD))

    runner = make_runner(FakeClient(['{"name": "Ada"}']), repairer=Fixer())
    events = list(runner.stream(CONTACT))
    assert [e.text for e in events if isinstance(e, TextDelta) and e.attempt == 2] == [GOOD]
    done = events[-1]
    assert isinstance(done, Done)
    assert done.result.validation.repaired
