"""Streamed runs: the run flow of :class:`~scriptorium.usecase.runner.Runner`, driven so that the
consumer sees the text as it is written.

The flow (generate, judge, repair, result), the call step and the watch are the ones every run
uses; only the drivers differ. Where ``run`` makes a step with ``calls.call``, these drivers read
``calls.stream`` (``calls.astream``) item by item and turn each chunk into events with an
:class:`_AttemptEvents`, which holds every streaming rule and does no I/O; the sync and the async
driver share it. A repair is asked for after the stream ended, exactly as ``run`` asks, and is
announced with ``AttemptStarted(kind="repair")``; a repairer with ``stream`` / ``astream`` (the
default one has them) streams its text too, any other gives it as one delta.

Errors: everything a client raises goes through the same LLM boundary as in ``run``; an
``LLMGenerateError`` after the first delta carries the text delivered so far as ``partial_text``.
A stream closed before its end ends the observation as ``cancelled``.

Fallbacks: the flow falls back only from a generation that failed before any of its text was
delivered (``partial_text`` unset), so a stream that has started never switches. The next
profile is prepared between events (no event of its own) and its generation is announced with
``AttemptStarted``, like any other.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Generator, Iterator
from contextlib import aclosing
from types import TracebackType
from typing import Any, Literal

import scriptorium.usecase.calls as calls
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.client import ReasoningChunk, StreamItem
from scriptorium.llm.model import LLMResponse
from scriptorium.usecase.calls import Callees
from scriptorium.usecase.events import (
    AttemptStarted,
    Done,
    PartialValue,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
)
from scriptorium.usecase.fallback import NextProfile
from scriptorium.usecase.flow import Outcome, Repair, RunFlow, Step
from scriptorium.usecase.model import RunResult
from scriptorium.usecase.offload import judged
from scriptorium.usecase.repair import RepairResult
from scriptorium.usecase.unicode import replace_surrogates
from scriptorium.usecase.watch import RunWatch
from scriptorium.validate.json.partial import PartialJSON

__all__ = ["AsyncRunStream", "RunStream", "StreamedRun"]

_JSON_FORMATS = ("json", "json_schema")


class _AttemptEvents:
    """The events of one streamed generation, from its items: the streaming rules without the
    I/O."""

    __slots__ = ("_outcome", "parser", "parts", "step", "thoughts")

    def __init__(self, step: Step, json_output: bool) -> None:
        self.step = step
        self.parts: list[str] = []
        self.thoughts: list[str] = []
        self.parser = PartialJSON() if json_output else None
        self._outcome: Outcome | None = None

    @property
    def outcome(self) -> Outcome:
        """What the generation gave, for the flow, once it ended (answered or failed)."""
        if self._outcome is None:
            raise RuntimeError("the generation has not ended")
        return self._outcome

    def started(self) -> AttemptStarted:
        """The event announcing the generation."""
        kind: Literal["initial", "repair"] = (
            "repair" if isinstance(self.step, Repair) else "initial"
        )
        return AttemptStarted(attempt=self.step.attempt, kind=kind)

    def chunk(self, text: str) -> Iterator[StreamEvent]:
        """The delta of one chunk (none for an empty one), then the partial value after it when
        it changed: computed once the delta was handed out, so parsing never delays the text. A
        reasoning chunk is a :class:`ReasoningDelta`, kept out of the text and the partial value.

        A lone surrogate becomes U+FFFD here, as it does in the result (the same function), so no
        consumer is handed text it cannot encode; the result's ``encoding`` issue reports it."""
        if not text:
            return
        if isinstance(text, ReasoningChunk):
            thought = replace_surrogates(text)[0]
            self.thoughts.append(thought)
            yield ReasoningDelta(text=thought, attempt=self.step.attempt)
            return
        text = replace_surrogates(text)[0]
        self.parts.append(text)
        yield TextDelta(text=text, attempt=self.step.attempt)
        parser = self.parser
        if parser is not None and parser.feed(text):
            yield PartialValue(value=parser.value, attempt=self.step.attempt)

    def item(self, item: StreamItem | None) -> Iterator[StreamEvent] | None:
        """The events of one item the call gave: a chunk's (:meth:`chunk`), or None when the
        generation ended with it (:meth:`answered`; None: the items ran out)."""
        if isinstance(item, str):
            return self.chunk(item)
        self.answered(item)
        return None

    def answered(self, last: StreamItem | None) -> None:
        """The generation ended with ``last``, its response (the chunks joined when the client
        sent none)."""
        if isinstance(last, LLMResponse):
            response = last
        else:
            reasoning = "".join(self.thoughts) or None
            response = LLMResponse(text="".join(self.parts), reasoning=reasoning)
        self._outcome = (
            RepairResult(response=response) if isinstance(self.step, Repair) else response
        )

    def failed(self, err: LLMGenerateError) -> None:
        """The generation failed with ``err``, which gets the text delivered so far as
        ``partial_text``."""
        if self.parts and err.partial_text is None:
            err.partial_text = "".join(self.parts)
        self._outcome = err

    def last(self) -> list[StreamEvent]:
        """The last partial value of an answered generation, now that the whole text can be
        read."""
        parser = self.parser
        answered = not isinstance(self._outcome, LLMGenerateError)
        if parser is not None and answered and parser.finish():
            return [PartialValue(value=parser.value, attempt=self.step.attempt)]
        return []

    def settled(self, result: RunResult) -> list[StreamEvent]:
        """The validated value as the last partial value, when the streamed text alone could not
        be read to it (prose around it, a lenient fix)."""
        parser = self.parser
        value = result.validation.value
        if parser is None or not result.validation.valid or value is None:
            return []
        if parser.has_value and parser.value == value:
            return []
        return [PartialValue(value=value, attempt=self.step.attempt)]


class StreamedRun:
    """A prepared run being streamed: its flow, what it calls, its watch, and what both drivers
    keep between events (the current attempt's events, the result)."""

    __slots__ = ("callees", "current", "flow", "json_output", "result", "watch")

    def __init__(self, flow: RunFlow, callees: Callees, watch: RunWatch) -> None:
        self.flow = flow
        self.callees = callees
        self.watch = watch
        self.json_output = flow.plan.prepared.output.format in _JSON_FORMATS
        self.current: _AttemptEvents | None = None
        self.result: RunResult | None = None

    def attempt(self, step: Step) -> _AttemptEvents:
        """The events of the generation ``step`` asks for."""
        self.current = _AttemptEvents(step, self.json_output)
        return self.current

    def call_ended(self, events: _AttemptEvents) -> list[StreamEvent]:
        """The generation of ``events`` ended (answered or failed): the watch is told; its last
        events."""
        self.watch.call_ended(events.outcome)
        return events.last()

    def finished(self) -> list[StreamEvent]:
        """The result, reported to the watch; the last events."""
        result = self.result = self.watch.ended(self.flow.result())
        settled = [] if self.current is None else self.current.settled(result)
        return [*settled, Done(result=result)]

    def failed(self, error: BaseException) -> None:
        """The run failed with ``error``; a stream closed or cancelled before its end counts as
        cancelled."""
        if isinstance(error, GeneratorExit | asyncio.CancelledError):
            error = LLMGenerateError(
                "the stream was closed before the run ended", reason="cancelled"
            )
        self.watch.failed(error)


def _events(run: StreamedRun) -> Generator[StreamEvent, None, None]:
    """The sync driver: the run flow, with generations read from the client's stream."""
    try:
        while (step := run.flow.next_step()) is not None:
            if isinstance(step, NextProfile):
                run.flow.send(calls.call(step, run.callees))
                continue
            events = run.attempt(step)
            yield events.started()
            run.watch.call_started(step)
            yield from _generation(run, step, events)
            run.flow.send(events.outcome)
        yield from run.finished()
    except BaseException as err:
        run.failed(err)
        raise


def _generation(run: StreamedRun, step: Step, events: _AttemptEvents) -> Iterator[StreamEvent]:
    """One streamed generation: deltas and partial values as the items arrive."""
    items = calls.stream(step, run.callees)
    try:
        with run.watch.scope(step):
            item = next(items, None)  # the opening and the retries, if any, happen in here
        while (chunk := events.item(item)) is not None:
            yield from chunk
            item = next(items, None)
    except LLMGenerateError as err:
        events.failed(err)
    finally:
        items.close()
    yield from run.call_ended(events)


async def _aevents(run: StreamedRun) -> AsyncGenerator[StreamEvent, None]:
    """The async driver: the same flow, the same events, over ``calls.astream``."""
    try:
        while (step := run.flow.next_step()) is not None:
            if isinstance(step, NextProfile):
                run.flow.send(await calls.acall(step, run.callees))
                continue
            events = run.attempt(step)
            yield events.started()
            run.watch.call_started(step)
            async with aclosing(_ageneration(run, step, events)) as generation:
                async for event in generation:
                    yield event
            await judged(run.flow, events.outcome)
        for event in run.finished():
            yield event
    except BaseException as err:
        run.failed(err)
        raise


async def _ageneration(
    run: StreamedRun, step: Step, events: _AttemptEvents
) -> AsyncGenerator[StreamEvent, None]:
    """The async twin of :func:`_generation`."""
    items = calls.astream(step, run.callees)
    try:
        with run.watch.scope(step):
            item = await anext(items, None)  # the opening and the retries, if any, happen here
        while (chunk := events.item(item)) is not None:
            for event in chunk:
                yield event
            item = await anext(items, None)
    except LLMGenerateError as err:
        events.failed(err)
    finally:
        await items.aclose()
    for event in run.call_ended(events):
        yield event


class _Reader:
    """What :class:`RunStream` and :class:`AsyncRunStream` share: the run, and the failure its
    events ended with (raised where it happens, and again by ``result()``)."""

    def __init__(self, run: StreamedRun) -> None:
        self._run = run
        self._error: BaseException | None = None

    def _keep(self, err: Exception) -> None:
        """Keep ``err``, raised by the events, for ``result()``, unless it is their end."""
        if not isinstance(err, StopIteration | StopAsyncIteration):
            self._error = err

    def _result(self) -> RunResult:
        """The run's result, once the events were read to their end."""
        if self._error is not None:
            raise self._error
        result = self._run.result
        if result is None:
            raise LLMGenerateError("the stream was closed before the run ended", reason="cancelled")
        return result


class RunStream(_Reader):
    """A streamed run: an iterator of events and a context manager (see ``Engine.stream``).

    Iterate it for :class:`TextDelta`, :class:`ReasoningDelta`, :class:`PartialValue`,
    :class:`AttemptStarted` and :class:`Done` events; :meth:`result` returns the
    :class:`RunResult` (reading whatever was not read yet). Leaving the ``with`` block, or :meth:`close`, stops the generation and closes its
    connection. A failure is raised where it happens, and again by :meth:`result`.
    """

    def __init__(self, run: StreamedRun) -> None:
        super().__init__(run)
        self._events = _events(run)

    def __iter__(self) -> RunStream:
        return self

    def __next__(self) -> StreamEvent:
        if self._error is not None:
            raise StopIteration
        try:
            return next(self._events)
        except Exception as err:
            self._keep(err)
            raise

    def result(self) -> RunResult:
        """The run's result, once the stream is read to its end (the rest is read now)."""
        for _ in self:
            pass
        return self._result()

    def close(self) -> None:
        """Stop the generation (its connection is closed); :meth:`result` then fails."""
        self._events.close()

    def __enter__(self) -> RunStream:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncRunStream(_Reader):
    """The async twin of :class:`RunStream`: ``async with`` / ``async for``, ``await result()``.

    ``await engine.astream(...)`` gives the same object, for code that prefers to await it.
    """

    def __init__(self, run: StreamedRun) -> None:
        super().__init__(run)
        self._events = _aevents(run)

    def __aiter__(self) -> AsyncRunStream:
        return self

    async def __anext__(self) -> StreamEvent:
        if self._error is not None:
            raise StopAsyncIteration
        try:
            return await anext(self._events)
        except Exception as err:
            self._keep(err)
            raise

    async def result(self) -> RunResult:
        """The run's result, once the stream is read to its end (the rest is read now)."""
        async for _ in self:
            pass
        return self._result()

    async def aclose(self) -> None:
        """Stop the generation (its connection is closed); :meth:`result` then fails."""
        await self._events.aclose()

    async def __aenter__(self) -> AsyncRunStream:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __await__(self) -> Generator[Any, None, AsyncRunStream]:
        return self._itself().__await__()

    async def _itself(self) -> AsyncRunStream:
        return self
