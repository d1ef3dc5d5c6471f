"""The call step: each step made inside the LLM boundary, failures handed back as outcomes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator

import pytest

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.client import StreamItem
from scriptorium.llm.model import LLMRequest, LLMResponse
from scriptorium.testing import FakeClient, UnexpectedCall
from scriptorium.usecase import calls
from scriptorium.usecase.calls import Callees
from scriptorium.usecase.flow import Answered, Generate, Repair, Step
from scriptorium.usecase.repair import RepairContext, RepairResult
from tests.usecase.plans import CONTACT, plan_of

PLAN = plan_of(CONTACT)
GENERATE = Generate(PLAN, 1)
CONTEXT = RepairContext(
    prepared=PLAN.prepared, request=PLAN.request, previous_output="{", issues=(), attempt=1
)
REPAIR = Repair(PLAN, 2, CONTEXT)
FIXED = LLMResponse(text='{"name": "Ada", "email": "ada@example.com"}')


class Fixer:
    """A repairer with only ``repair``; remembers the thread it ran on."""

    def __init__(self) -> None:
        self.threads: list[str] = []

    def repair(self, context: RepairContext) -> RepairResult:
        self.threads.append(threading.current_thread().name)
        return RepairResult(response=FIXED)


class AsyncFixer(Fixer):
    async def arepair(self, context: RepairContext) -> RepairResult:
        return RepairResult(response=LLMResponse(text="async"))


def _items(step: Step, callees: Callees) -> list[StreamItem]:
    return list(calls.stream(step, callees))


def test_a_foreign_failure_is_an_outcome_with_the_runs_context() -> None:
    """What a client raises comes back, translated, as the call's outcome (never raised)."""

    class Broken:
        def generate(self, request: LLMRequest) -> LLMResponse:
            raise ConnectionResetError("peer went away")

    outcome = calls.call(GENERATE, Callees(Broken(), None))
    assert isinstance(outcome, LLMGenerateError)
    assert (outcome.reason, outcome.prompt_id, outcome.profile) == (
        "server_error",
        "extract/contact",
        "offline",
    )
    assert isinstance(outcome.__cause__, ConnectionResetError)


def test_a_failed_repair_is_an_outcome_too() -> None:
    failure = LLMGenerateError("down", reason="overloaded")

    class Refuser:
        def repair(self, context: RepairContext) -> RepairResult:
            raise failure

    assert calls.call(REPAIR, Callees(FakeClient(), Refuser())) is failure


def test_a_test_double_failing_the_test_goes_through_as_itself() -> None:
    """FakeClient() called by code that must not call: the test fails, not the run."""
    with pytest.raises(UnexpectedCall):
        calls.call(GENERATE, Callees(FakeClient(), None))


def test_an_answered_step_reads_the_answer_inside_the_boundary() -> None:
    """A batch answer that is not a response is an invalid_response outcome."""

    def answer(request: LLMRequest) -> LLMResponse:
        return "text"  # type: ignore[return-value]  # a broken answer, on purpose

    outcome = calls.call(Answered(PLAN, 1, answer), Callees(FakeClient(), None))
    assert isinstance(outcome, LLMGenerateError)
    assert outcome.reason == "invalid_response"


def test_async_calls_await_async_clients_and_thread_sync_ones() -> None:
    """agenerate is awaited; a client with only generate runs in a worker thread."""
    threads: list[str] = []

    class Sync:
        def generate(self, request: LLMRequest) -> LLMResponse:
            threads.append(threading.current_thread().name)
            return FIXED

    class Async:
        async def agenerate(self, request: LLMRequest) -> LLMResponse:
            return LLMResponse(text="awaited")

    assert asyncio.run(calls.acall(GENERATE, Callees(Sync(), None))) == FIXED
    assert threads
    assert threads[0] != threading.main_thread().name
    outcome = asyncio.run(calls.acall(GENERATE, Callees(Async(), None)))
    assert isinstance(outcome, LLMResponse)
    assert outcome.text == "awaited"


def test_async_repairs_use_arepair_when_there_is_one_else_a_thread() -> None:
    plain, twin = Fixer(), AsyncFixer()
    threaded = asyncio.run(calls.acall(REPAIR, Callees(FakeClient(), plain)))
    assert isinstance(threaded, RepairResult)
    assert plain.threads
    assert plain.threads[0] != threading.main_thread().name
    awaited = asyncio.run(calls.acall(REPAIR, Callees(FakeClient(), twin)))
    assert isinstance(awaited, RepairResult)
    assert awaited.response.text == "async"
    assert twin.threads == []


def test_a_stream_gives_text_then_the_checked_response() -> None:
    """Chunks as they come, then the response with lone surrogates replaced."""

    class Writer:
        def generate(self, request: LLMRequest) -> LLMResponse:
            raise AssertionError("not called")

        def stream(self, request: LLMRequest) -> Iterator[StreamItem]:
            yield "a"
            yield "b"
            yield LLMResponse(text="ab\ud800")
            yield "never read"

    items = _items(GENERATE, Callees(Writer(), None))
    assert items[:2] == ["a", "b"]
    last = items[2]
    assert isinstance(last, LLMResponse)
    assert last.text == "ab\ufffd"
    assert len(items) == 3


def test_a_streamed_item_that_is_not_text_is_an_invalid_response() -> None:
    class Odd:
        def generate(self, request: LLMRequest) -> LLMResponse:
            raise AssertionError("not called")

        def stream(self, request: LLMRequest) -> Iterator[object]:
            yield 42

    with pytest.raises(LLMGenerateError) as caught:
        _items(GENERATE, Callees(Odd(), None))
    assert (caught.value.reason, caught.value.prompt_id) == ("invalid_response", "extract/contact")


def test_leaving_a_stream_closes_the_clients_stream() -> None:
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

    items = calls.stream(GENERATE, Callees(Endless(), None))
    assert next(items) == "word "
    items.close()
    assert closed == [True]


def test_a_repairer_that_cannot_stream_is_one_chunk() -> None:
    """Sync and async: the repaired text as one chunk, then its response."""
    items = _items(REPAIR, Callees(FakeClient(), Fixer()))
    assert items == [FIXED.text, FIXED]

    async def collect() -> list[StreamItem]:
        return [item async for item in calls.astream(REPAIR, Callees(FakeClient(), Fixer()))]

    assert asyncio.run(collect()) == [FIXED.text, FIXED]


def test_an_async_stream_reads_astream() -> None:
    class Writer:
        async def agenerate(self, request: LLMRequest) -> LLMResponse:
            raise AssertionError("not called")

        async def astream(self, request: LLMRequest) -> AsyncIterator[StreamItem]:
            yield "x"
            yield LLMResponse(text="x")

    async def collect() -> list[StreamItem]:
        return [item async for item in calls.astream(GENERATE, Callees(Writer(), None))]

    assert asyncio.run(collect()) == ["x", LLMResponse(text="x")]
