"""Streamed runs: the run flow of :class:`~scriptorium.usecase.runner.Runner`, driven so that the
consumer sees the text as it is written.

The flow itself (generate, judge, repair, result) is the runner's generator, unchanged; only the
drivers differ. Where ``run`` sends a generation request to ``client.generate``, these drivers
read ``client.stream`` (``astream``) chunk by chunk and turn each chunk into events with an
:class:`_AttemptEvents`, which holds every streaming rule and does no I/O; the sync and the async
driver share it. A repair is asked for after the stream ended, exactly as ``run`` asks, and is
announced with ``AttemptStarted(kind="repair")``; a repairer with ``stream`` / ``astream`` (the
default one has them) streams its text too, any other gives it as one delta.

Errors: everything a client raises goes through the same LLM boundary as in ``run``; an
``LLMGenerateError`` after the first delta carries the text delivered so far as ``partial_text``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from datetime import datetime
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import LLMRequest, LLMResponse
from scriptorium.llm.streaming import StreamItem, astream_of, stream_of
from scriptorium.observe import scope as run_scope
from scriptorium.usecase import observed
from scriptorium.usecase.boundary import checked_response
from scriptorium.usecase.events import AttemptStarted, Done, PartialValue, StreamEvent, TextDelta
from scriptorium.usecase.model import RunRequest, RunResult
from scriptorium.usecase.repair import RepairResult
from scriptorium.validate.partial import PartialJSON

if TYPE_CHECKING:
    from contextvars import Token

    from scriptorium.observe.observer import GenerationKind, GenerationObservation, Observer
    from scriptorium.observe.scope import RunScope
    from scriptorium.usecase.runner import Runner, _Plan

__all__ = ["AsyncRunStream", "RunStream"]

_JSON_FORMATS = ("json", "json_schema")


class _AttemptEvents:
    """The events of one generation, from its chunks: the streaming rules without the I/O."""

    __slots__ = ("attempt", "parser", "parts")

    def __init__(self, attempt: int, json_output: bool) -> None:
        self.attempt = attempt
        self.parts: list[str] = []
        self.parser = PartialJSON() if json_output else None

    def delta(self, item: object) -> TextDelta | None:
        """The delta of one chunk (None for an empty one)."""
        if not isinstance(item, str):
            raise LLMGenerateError(
                f"the client streamed {type(item).__name__}, not text", reason="invalid_response"
            )
        if not item:
            return None
        self.parts.append(item)
        return TextDelta(text=item, attempt=self.attempt)

    def partial(self, item: str) -> PartialValue | None:
        """The partial value after ``item``, when it changed. Asked after the delta was handed
        out, so parsing never delays the text."""
        parser = self.parser
        if parser is not None and parser.feed(item):
            return PartialValue(value=parser.value, attempt=self.attempt)
        return None

    def end(self, response: LLMResponse | None) -> tuple[LLMResponse, list[StreamEvent]]:
        """The attempt's response (the chunks joined when the client sent none) and the last
        partial value, once the whole text can be read."""
        if response is None:
            response = LLMResponse(text="".join(self.parts))
        events: list[StreamEvent] = []
        parser = self.parser
        if parser is not None and parser.finish():
            events.append(PartialValue(value=parser.value, attempt=self.attempt))
        return response, events

    def whole(self, text: str) -> list[StreamEvent]:
        """The events of a text that arrived in one piece (a repair)."""
        events: list[StreamEvent] = []
        delta = self.delta(text)
        if delta is not None:
            events.append(delta)
            partial = self.partial(text)
            if partial is not None:
                events.append(partial)
        return events + self.end(None)[1]

    def failed(self, err: LLMGenerateError) -> LLMGenerateError:
        """``err`` with the text delivered so far as ``partial_text``."""
        if self.parts and err.partial_text is None:
            err.partial_text = "".join(self.parts)
        return err

    def settled(self, result: RunResult) -> list[StreamEvent]:
        """The validated value as the last partial value, when the streamed text alone could not
        be read to it (prose around it, a lenient fix)."""
        parser = self.parser
        value = result.validation.value
        if parser is None or not result.validation.valid or value is None:
            return []
        if parser.has_value and parser.value == value:
            return []
        return [PartialValue(value=value, attempt=self.attempt)]


class _Watched:
    """What the runner's observer sees of a streamed run: the calls ``run`` makes to it (start,
    prepared, each generation, end), each guarded so watching never changes the outcome."""

    __slots__ = ("generation", "open", "run")

    def __init__(self, observer: Observer, run_id: str, prompt_id: str) -> None:
        self.run = observed._guarded("start_run", observer.start_run, run_id, prompt_id)
        self.generation: GenerationObservation | None = None
        self.open = True

    def prepared(self, plan: _Plan) -> None:
        if self.run is not None:
            observed._guarded("prepared", self.run.prepared, plan.prepared)

    def call_started(self, kind: GenerationKind, request: LLMRequest) -> None:
        if self.run is not None:
            self.generation = observed._guarded("generation", self.run.generation, kind, request)

    def call_ended(self, outcome: object, error: BaseException | None) -> None:
        generation, self.generation = self.generation, None
        if generation is None:
            return
        if isinstance(outcome, RepairResult):
            outcome = outcome.response
        if isinstance(outcome, LLMGenerateError):
            outcome, error = None, outcome
        response = outcome if isinstance(outcome, LLMResponse) else None
        observed._guarded("generation end", generation.end, response, error)

    def ended(self, result: RunResult | None, error: BaseException | None) -> None:
        if not self.open:
            return
        self.open = False
        if isinstance(error, GeneratorExit | asyncio.CancelledError):
            error = LLMGenerateError(
                "the stream was closed before the run ended", reason="cancelled"
            )
        if self.generation is not None:
            self.call_ended(None, error)
        if self.run is not None:
            observed._guarded("end", self.run.end, result, error)


class _Driver:
    """What both drivers share: the plan, the flow and the bookkeeping between attempts."""

    def __init__(self, runner: Runner, request: RunRequest, run_id: str, started: datetime) -> None:
        observer = runner._observer
        self.watch: _Watched | None = None
        if observer is not None:
            prompt_id = request.prompt_id if isinstance(request, RunRequest) else "?"
            self.watch = _Watched(observer, run_id, prompt_id)
        try:
            plan = runner._plan(request)
        except BaseException as err:
            self.failed(err)
            raise
        if self.watch is not None:
            self.watch.prepared(plan)
        self.runner = runner
        self.plan = plan
        self.run_id = run_id
        self.started = started
        self.flow = runner._flow(plan)
        self.json_output = plan.prepared.output.format in _JSON_FORMATS
        self.attempt = 0
        self.current: _AttemptEvents | None = None
        self.result: RunResult | None = None

    def begin(self, kind: str) -> AttemptStarted:
        self.attempt += 1
        self.current = _AttemptEvents(self.attempt, self.json_output)
        return AttemptStarted(
            attempt=self.attempt, kind="initial" if kind == "initial" else "repair"
        )

    def boundary(self, what: str = "calling the model") -> Any:
        return self.runner._llm_boundary(self.plan, what)

    def repaired(self, outcome: object) -> list[StreamEvent]:
        assert self.current is not None
        if isinstance(outcome, RepairResult):
            return self.current.whole(outcome.response.text)
        return []

    def call_started(self, call: Any) -> None:
        if self.watch is not None:
            request = getattr(call, "request", None)
            if request is None:  # a repair: the request it repairs
                self.watch.call_started("repair", call.context.request)
            else:
                self.watch.call_started("initial", request)

    def enter_scope(self) -> Token[RunScope | None] | None:
        """The run's log scope (and the observed generation, for retry events) while the client
        is asked for its first item: a context variable is set and reset within that one step,
        never across a yield to the consumer."""
        prepared = self.plan.prepared
        watch = self.watch
        if watch is None:
            return run_scope.enter_for_logs(self.run_id, prepared.prompt_id, prepared.request_hash)
        scope = run_scope.RunScope(
            self.run_id, prepared.prompt_id, prepared.request_hash, watch.generation
        )
        return run_scope.enter(scope)

    def leave_scope(self, token: Token[RunScope | None] | None) -> None:
        if token is not None:
            run_scope.leave(token)

    def call_ended(self, outcome: object, error: BaseException | None = None) -> None:
        if self.watch is not None:
            self.watch.call_ended(outcome, error)

    def failed(self, error: BaseException) -> None:
        if self.watch is not None:
            self.watch.ended(None, error)

    def finish(self, outcome: Any) -> list[StreamEvent]:
        result = self.runner._result(self.run_id, self.started, self.plan, outcome)
        self.result = result
        if self.watch is not None:
            self.watch.ended(result, None)
        assert self.current is not None
        return [*self.current.settled(result), Done(result=result)]


def _events(driver: _Driver) -> Generator[StreamEvent, None, None]:
    """The sync driver: the run flow, with generations read from the client's stream."""
    try:
        yield from _flow_events(driver)
    except BaseException as err:
        driver.failed(err)
        raise


def _flow_events(driver: _Driver) -> Generator[StreamEvent, None, None]:
    from scriptorium.usecase.runner import _Generate

    flow = driver.flow
    call = next(flow)
    while True:
        outcome: Any
        if isinstance(call, _Generate):
            yield driver.begin("initial")
            driver.call_started(call)
            opened = partial(stream_of, driver.runner._client, call.request)
            outcome = yield from _generation(driver, opened)
        else:
            yield driver.begin("repair")
            driver.call_started(call)
            stream = getattr(driver.runner._repairer, "stream", None)
            if callable(stream):
                try:
                    response = yield from _generation(
                        driver, partial(stream, call.context), "repairing the output"
                    )
                except LLMGenerateError as err:
                    outcome = err  # a failed repair ends the repairs; the flow reports it
                else:
                    outcome = RepairResult(response=response)
            else:
                outcome = driver.runner._call(call, driver.plan)
                driver.call_ended(outcome)
                yield from driver.repaired(outcome)
        try:
            call = flow.send(outcome)
        except StopIteration as done:
            yield from driver.finish(done.value)
            return


def _generation(
    driver: _Driver,
    open_items: Callable[[], Iterator[StreamItem]],
    what: str = "calling the model",
) -> Generator[StreamEvent, None, LLMResponse]:
    """One streamed generation: deltas and partial values as the items arrive; its response."""
    attempt = driver.current
    assert attempt is not None
    response: LLMResponse | None = None
    items: Iterator[StreamItem] | None = None
    try:
        with driver.boundary(what):
            items = iter(open_items())
            token = driver.enter_scope()
            try:
                first = next(items, None)  # the retries, if any, happen in here
            finally:
                driver.leave_scope(token)
            item = first
            while item is not None:
                if isinstance(item, LLMResponse):
                    response = item
                    break
                delta = attempt.delta(item)
                if delta is not None:
                    yield delta
                    partial = attempt.partial(delta.text)
                    if partial is not None:
                        yield partial
                item = next(items, None)
            response = checked_response(response) if response is not None else None
    except LLMGenerateError as err:
        driver.call_ended(None, attempt.failed(err))
        raise
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()
    final, events = attempt.end(response)
    driver.call_ended(final)
    yield from events
    return final


async def _aevents(driver: _Driver) -> AsyncGenerator[StreamEvent, None]:
    """The async driver: the same flow, the same events, over ``astream``."""
    try:
        async for event in _aflow_events(driver):
            yield event
    except BaseException as err:
        driver.failed(err)
        raise


async def _aflow_events(driver: _Driver) -> AsyncGenerator[StreamEvent, None]:
    from scriptorium.usecase.runner import _Generate

    flow = driver.flow
    call = next(flow)
    while True:
        outcome: Any
        holder: list[LLMResponse] = []
        if isinstance(call, _Generate):
            yield driver.begin("initial")
            driver.call_started(call)
            aopened = partial(astream_of, driver.runner._client, call.request)
            async for event in _ageneration(driver, aopened, holder):
                yield event
            outcome = holder[0]
        else:
            yield driver.begin("repair")
            driver.call_started(call)
            astream = getattr(driver.runner._repairer, "astream", None)
            if callable(astream):
                try:
                    async for event in _ageneration(
                        driver, partial(astream, call.context), holder, "repairing the output"
                    ):
                        yield event
                except LLMGenerateError as err:
                    outcome = err  # a failed repair ends the repairs; the flow reports it
                else:
                    outcome = RepairResult(response=holder[0])
            else:
                outcome = await driver.runner._acall(call, driver.plan)
                driver.call_ended(outcome)
                for event in driver.repaired(outcome):
                    yield event
        try:
            call = flow.send(outcome)
        except StopIteration as done:
            for event in driver.finish(done.value):
                yield event
            return


async def _ageneration(
    driver: _Driver,
    open_items: Callable[[], AsyncIterator[StreamItem]],
    holder: list[LLMResponse],
    what: str = "calling the model",
) -> AsyncGenerator[StreamEvent, None]:
    """The async twin of :func:`_generation`; the response goes into ``holder``."""
    attempt = driver.current
    assert attempt is not None
    response: LLMResponse | None = None
    items: AsyncIterator[StreamItem] | None = None
    try:
        with driver.boundary(what):
            items = aiter(open_items())
            token = driver.enter_scope()
            try:
                first = await anext(items, None)  # the retries, if any, happen in here
            finally:
                driver.leave_scope(token)
            item = first
            while item is not None:
                if isinstance(item, LLMResponse):
                    response = item
                    break
                delta = attempt.delta(item)
                if delta is not None:
                    yield delta
                    partial = attempt.partial(delta.text)
                    if partial is not None:
                        yield partial
                item = await anext(items, None)
            response = checked_response(response) if response is not None else None
    except LLMGenerateError as err:
        driver.call_ended(None, attempt.failed(err))
        raise
    finally:
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            await aclose()
    final, events = attempt.end(response)
    driver.call_ended(final)
    for event in events:
        yield event
    holder.append(final)


class RunStream:
    """A streamed run: an iterator of events and a context manager (see ``Engine.stream``).

    Iterate it for :class:`TextDelta`, :class:`PartialValue`, :class:`AttemptStarted` and
    :class:`Done` events; :meth:`result` returns the :class:`RunResult` (reading whatever was not
    read yet). Leaving the ``with`` block, or :meth:`close`, stops the generation and closes its
    connection. A failure is raised where it happens, and again by :meth:`result`.
    """

    def __init__(self, runner: Runner, request: RunRequest, run_id: str, started: datetime) -> None:
        self._driver = _Driver(runner, request, run_id, started)
        self._events = _events(self._driver)
        self._error: BaseException | None = None

    def __iter__(self) -> RunStream:
        return self

    def __next__(self) -> StreamEvent:
        if self._error is not None:
            raise StopIteration
        try:
            return next(self._events)
        except StopIteration:
            raise
        except Exception as err:
            self._error = err
            raise

    def result(self) -> RunResult:
        """The run's result, once the stream is read to its end (the rest is read now)."""
        for _ in self:
            pass
        if self._error is not None:
            raise self._error
        result = self._driver.result
        if result is None:
            raise LLMGenerateError("the stream was closed before the run ended", reason="cancelled")
        return result

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


class AsyncRunStream:
    """The async twin of :class:`RunStream`: ``async with`` / ``async for``, ``await result()``.

    ``await engine.astream(...)`` gives the same object, for code that prefers to await it.
    """

    def __init__(self, runner: Runner, request: RunRequest, run_id: str, started: datetime) -> None:
        self._driver = _Driver(runner, request, run_id, started)
        self._events = _aevents(self._driver)
        self._error: BaseException | None = None

    def __aiter__(self) -> AsyncRunStream:
        return self

    async def __anext__(self) -> StreamEvent:
        if self._error is not None:
            raise StopAsyncIteration
        try:
            return await anext(self._events)
        except StopAsyncIteration:
            raise
        except Exception as err:
            self._error = err
            raise

    async def result(self) -> RunResult:
        """The run's result, once the stream is read to its end (the rest is read now)."""
        async for _ in self:
            pass
        if self._error is not None:
            raise self._error
        result = self._driver.result
        if result is None:
            raise LLMGenerateError("the stream was closed before the run ended", reason="cancelled")
        return result

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
