"""The call step: one step of the run flow made through the client or the repairer, inside the LLM
boundary, in one place for every driver.

:func:`call` / :func:`acall` make a step and return its outcome; :func:`stream` / :func:`astream`
make it as a stream of items (text chunks, then the checked response). Either way a failure the
boundary knows (``LLMGenerateError``, or anything foreign, translated to one) is an *outcome*,
handed to the flow, which decides what it means; only a test double failing the test and
``BaseException`` (interrupts, cancellation, a closed stream) go through as themselves.

Async: a client with ``agenerate`` is awaited; a sync-only client runs in a worker thread. A
repairer with ``arepair`` is awaited; one with only ``repair`` runs in a worker thread. Asked with
``isinstance`` against the capability Protocols of ``usecase.repair``, never by probing
attributes.

What a call does is written once, without its I/O, in :func:`_made`: a generator that yields the
one I/O the step needs (a generation, a repair, preparing a profile; an answered step needs none)
and returns the outcome. :func:`call` makes that I/O in the caller's thread, :func:`acall` awaits
it; each throws a failure back in at the point it was asked for, so it fails inside the boundary
as if it had been called there.

A :class:`~scriptorium.usecase.fallback.NextProfile` step (a run falling back) is made here too, by
the planner the callees hold: its outcome is the next profile's plan, or the sentinel preparing
it raised (an async run prepares a request carrying much content in a worker thread, as it
prepared the first). Each is announced at INFO (``-v``): "falling back from P to Q after R".
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from dataclasses import dataclass
from typing import Protocol, cast, runtime_checkable

from scriptorium.errors import LLMGenerateError, ScriptoriumError
from scriptorium.llm.client import (
    AsyncClient,
    Client,
    StreamItem,
    TokenCounter,
    agenerate_with,
    supports,
)
from scriptorium.llm.model import LLMRequest, LLMResponse, Uncounted
from scriptorium.llm.streaming import astream_of, response_pieces, stream_of
from scriptorium.usecase.boundary import LLMBoundary, checked_repair
from scriptorium.usecase.fallback import NextProfile
from scriptorium.usecase.flow import Answered, Outcome, Repair, Step
from scriptorium.usecase.model import RunRequest
from scriptorium.usecase.plan import Plan, Planner
from scriptorium.usecase.prepare import heavy_to_prepare
from scriptorium.usecase.repair import (
    AsyncOutputRepairer,
    AsyncStreamingRepairer,
    OutputRepairer,
    RepairContext,
    RepairResult,
    StreamingRepairer,
)

__all__ = ["Callees", "acall", "astream", "boundary", "call", "count_tokens", "stream"]

_log = logging.getLogger("scriptorium.runner")


class Callees:
    """What a run calls: the client, the repairer (None: runs never repair) and the planner that
    prepares the later profiles of a fallback chain (None: runs never fall back). The client's
    kinds (sync, async) are decided once per client object: a runtime-checkable ``isinstance``
    is slow on every call."""

    __slots__ = ("_kinds", "client", "planner", "repairer")

    def __init__(
        self,
        client: Client | AsyncClient,
        repairer: OutputRepairer | None,
        planner: Planner | None = None,
    ) -> None:
        self.client = client
        self.repairer = repairer
        self.planner = planner
        self._kinds: tuple[Client | None, AsyncClient | None] | None = None

    def kinds(self) -> tuple[Client | None, AsyncClient | None]:
        """The client as a sync and as an async client (None where it is not one)."""
        kinds = self._kinds
        if kinds is None:
            client = self.client
            sync = client if isinstance(client, Client) else None
            aio = client if isinstance(client, AsyncClient) else None
            kinds = self._kinds = (sync, aio)
        return kinds

    def the_planner(self) -> Planner:
        """The planner; a NextProfile step without one is a configuration error."""
        if self.planner is None:
            raise LLMGenerateError(
                "a fallback was asked of a run without a planner", reason="config"
            )
        return self.planner

    def the_repairer(self) -> OutputRepairer:
        """The repairer; a Repair step without one is a configuration error."""
        if self.repairer is None:
            raise LLMGenerateError(
                "a repair was asked of a run without a repairer", reason="config"
            )
        return self.repairer


def boundary(step: Step) -> LLMBoundary:
    """The LLM boundary of ``step``: the run's context for errors, the key to scrub. Every step
    of every driver passes here once, so a repair is announced here (INFO, ``-v``)."""
    if isinstance(step, Repair):
        issues = step.context.issues
        # Where and which rule, not the message: it may quote the output, which may quote inputs.
        first = f": {issues[0].path or '/'} fails {issues[0].keyword or 'parse'}" if issues else ""
        _log.info(
            "repairing the output of %s (repair %d, %d issue%s%s)",
            step.plan.prepared.prompt_id,
            step.context.attempt,
            len(issues),
            "" if len(issues) == 1 else "s",
            first[:200],
        )
    return LLMBoundary(step.plan.prepared, step.plan.request, step.what, step.plan.signing_secrets)


def call(step: Step, callees: Callees) -> Outcome:
    """Make ``step``: its response or repair, checked, or the failure it ended with (for a
    NextProfile step, the plan, or the sentinel preparing it raised)."""
    making = _Making(step, callees)
    while isinstance(now := making.next(), _IO):
        try:
            making.took(now.run())
        except BaseException as err:
            making.failed(err)
    return now


async def acall(step: Step, callees: Callees) -> Outcome:
    """The async twin of :func:`call`."""
    making = _Making(step, callees)
    while isinstance(now := making.next(), _IO):
        try:
            making.took(await now.arun())
        except BaseException as err:
            making.failed(err)
    return now


def _made(step: Step, callees: Callees) -> Generator[_IO, object, Outcome]:
    """The call of ``step`` without its I/O: the I/O it needs is yielded (the driver makes it
    and sends its value back, or throws its failure in, so it fails inside the boundary); what
    the call gives is returned."""
    if isinstance(step, NextProfile):
        try:
            planner = _announced(step, callees)
            return cast(Plan, (yield _Preparing(planner, step.origin, step.profile)))
        except ScriptoriumError as err:
            return err
    try:
        with boundary(step) as checked:
            if isinstance(step, Repair):
                return checked.repair((yield _Repairing(callees.the_repairer(), step.context)))
            if isinstance(step, Answered):
                return checked.response(step.answer(step.request))
            return checked.response((yield _Generating(callees, step.request)))
    except LLMGenerateError as err:
        return err


class _Making:
    """One call being made: :func:`_made` resumed with what each I/O gave."""

    __slots__ = ("_made", "_sent")

    def __init__(self, step: Step, callees: Callees) -> None:
        self._made = _made(step, callees)
        #: What the last I/O gave: its value, or its failure.
        self._sent: tuple[object, BaseException | None] = (None, None)

    def next(self) -> _IO | Outcome:
        """The next I/O to make, or what the call gave once it is over. Resumed here, outside
        the driver's ``except`` block, so a failure does not become the context of the next."""
        (value, error), self._sent = self._sent, (None, None)
        try:
            return self._made.send(value) if error is None else self._made.throw(error)
        except StopIteration as end:
            outcome: Outcome = end.value
            return outcome

    def took(self, value: object) -> None:
        self._sent = (value, None)

    def failed(self, err: BaseException) -> None:
        self._sent = (None, err)


class _IO:
    """One I/O of a call, made in the caller's thread (:meth:`run`) or awaited (:meth:`arun`)."""

    __slots__ = ()

    def run(self) -> object:
        raise NotImplementedError

    async def arun(self) -> object:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class _Preparing(_IO):
    """The plan of the next profile of a fallback chain. An async run prepares a request
    carrying much content in a worker thread, as it prepared the first."""

    planner: Planner
    origin: RunRequest
    profile: str

    def run(self) -> Plan:
        return self.planner.plan_fallback(self.origin, self.profile)

    async def arun(self) -> Plan:
        if not heavy_to_prepare(self.origin):
            return self.run()
        import asyncio  # not at module level: loaded by now, and slow to import for sync use

        return await asyncio.to_thread(self.run)


@dataclass(frozen=True, slots=True)
class _Repairing(_IO):
    """A repair: ``arepair`` awaited when the repairer has it, else ``repair`` in a worker
    thread."""

    repairer: OutputRepairer
    context: RepairContext

    def run(self) -> RepairResult:
        return self.repairer.repair(self.context)

    async def arun(self) -> RepairResult:
        return await _arepair(self.repairer, self.context)


@dataclass(frozen=True, slots=True)
class _Generating(_IO):
    """A generation: ``agenerate`` awaited when the client has it, else ``generate`` (in a
    worker thread when awaited)."""

    callees: Callees
    request: LLMRequest

    def run(self) -> LLMResponse:
        client = self.callees.kinds()[0]
        if client is None:
            raise _no_generate()
        return client.generate(self.request)

    async def arun(self) -> LLMResponse:
        if self.callees.kinds() == (None, None):
            raise _no_generate()
        return await agenerate_with(self.callees.client, self.request)


def _no_generate() -> LLMGenerateError:
    return LLMGenerateError("the client has no generate()", reason="config")


def _announced(step: NextProfile, callees: Callees) -> Planner:
    """The planner for ``step``, once the fallback is logged (INFO, ``-v``)."""
    skipped = f" ({', '.join(step.skipped)} cooling down)" if step.skipped else ""
    _log.info(
        "falling back from %s to %s after %s%s (prompt %s)",
        step.left,
        step.profile,
        step.reason,
        skipped,
        step.plan.prepared.prompt_id,
    )
    return callees.the_planner()


def count_tokens(plan: Plan, client: object) -> int | Uncounted | None:
    """The input tokens of ``plan``'s request as the client counts them (its ``count_tokens``,
    e.g. Anthropic's counting endpoint), inside the LLM boundary; None when it has no count (no
    such method, or an answer that is not a count); :class:`Uncounted` when its endpoint said
    it could not count."""
    if not supports(client, TokenCounter):
        return None
    with LLMBoundary(plan.prepared, plan.request, "counting tokens", plan.signing_secrets):
        counted = cast(TokenCounter, client).count_tokens(plan.request)
    if isinstance(counted, Uncounted):
        return counted
    if isinstance(counted, int) and not isinstance(counted, bool) and counted >= 0:
        return counted
    return None


async def _arepair(repairer: OutputRepairer, context: RepairContext) -> RepairResult:
    if isinstance(repairer, AsyncOutputRepairer):
        return await repairer.arepair(context)
    import asyncio  # as in _Preparing

    return await asyncio.to_thread(repairer.repair, context)


def stream(step: Step, callees: Callees) -> Generator[StreamItem, None, None]:
    """Make ``step`` as a stream: its text chunks as they arrive, then its checked response (the
    last item; none when the client ended without one). Everything, the opening included, happens
    while the stream is read, inside the boundary; leaving it closes the client's stream. A
    repairer that cannot stream gives its repaired text as one chunk."""
    with boundary(step) as checked:
        items = _opened(step, callees)
        try:
            for item in items:
                yield from checked.streamed(item)
                if isinstance(item, LLMResponse):
                    return
            yield from checked.held()
        finally:
            if supports(items, _Closable):
                cast(_Closable, items).close()


async def astream(step: Step, callees: Callees) -> AsyncGenerator[StreamItem, None]:
    """The async twin of :func:`stream`."""
    with boundary(step) as checked:
        items = _aopened(step, callees)
        try:
            async for item in items:
                for handed in checked.streamed(item):
                    yield handed
                if isinstance(item, LLMResponse):
                    return
            for handed in checked.held():
                yield handed
        finally:
            if supports(items, _AsyncClosable):
                await cast(_AsyncClosable, items).aclose()


def _opened(step: Step, callees: Callees) -> Iterator[StreamItem]:
    if isinstance(step, Repair):
        return _repair_stream(callees.the_repairer(), step.context)
    return stream_of(callees.client, step.request)


def _aopened(step: Step, callees: Callees) -> AsyncIterator[StreamItem]:
    if isinstance(step, Repair):
        return _arepair_stream(callees.the_repairer(), step.context)
    return astream_of(callees.client, step.request)


def _repair_stream(repairer: OutputRepairer, context: RepairContext) -> Iterator[StreamItem]:
    """The repairer's stream, or its repair as one chunk when it cannot stream."""
    if isinstance(repairer, StreamingRepairer):
        return iter(repairer.stream(context))
    return _one_chunk(checked_repair(repairer.repair(context)))


def _arepair_stream(repairer: OutputRepairer, context: RepairContext) -> AsyncIterator[StreamItem]:
    """The async twin of :func:`_repair_stream`."""
    if isinstance(repairer, AsyncStreamingRepairer):
        return aiter(repairer.astream(context))
    return _aone_chunk(repairer, context)


def _one_chunk(repaired: RepairResult) -> Iterator[StreamItem]:
    yield from response_pieces(repaired.response)
    yield repaired.response


async def _aone_chunk(
    repairer: OutputRepairer, context: RepairContext
) -> AsyncIterator[StreamItem]:
    for item in _one_chunk(checked_repair(await _arepair(repairer, context))):
        yield item


@runtime_checkable
class _Closable(Protocol):
    def close(self) -> object: ...


@runtime_checkable
class _AsyncClosable(Protocol):
    async def aclose(self) -> object: ...
