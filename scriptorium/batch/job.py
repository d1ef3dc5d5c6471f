"""The provider-batch driver: does the I/O the state machine (:mod:`scriptorium.batch.state`) asks
for, saving the state around every submission, and turns the rows back into run results.

``submit`` prepares every request exactly as a run would, sends each distinct request once
(``custom_id`` = its request hash's hex digits) in chunks within the provider's limits, and returns
a :class:`BatchJob`; ``resume`` rebuilds a job from its saved state and carries on from wherever
the last process stopped, sending again only what expired, was canceled, or provably never
arrived.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import scriptorium.batch.state as machine
from scriptorium.batch.state import BatchState, Chunk, Row
from scriptorium.batch.store import StateFile
from scriptorium.errors import InvalidRequestError, LLMGenerateError, ScriptoriumError, translate
from scriptorium.llm.batches import BatchLimits, BatchProvider, Entry, RowResult
from scriptorium.llm.model import LLMRequest
from scriptorium.llm.registry import Registry
from scriptorium.llm.retry import RetryHooks
from scriptorium.usecase.model import RunRequest, RunResult

if TYPE_CHECKING:
    from scriptorium.usecase.runner import Runner

__all__ = [
    "CRASH_ENV",
    "BatchJob",
    "BatchStatus",
    "StepHook",
    "batch_apis",
    "crash_at",
    "resume",
    "submit",
]

#: Called with the name of each step a job reaches: ``before-submit`` (state saved, create not
#: sent), ``after-submit`` (create answered, state not saved yet), ``in-progress`` (a poll found
#: the batch running); the CLI adds ``writing-results``.
StepHook = Callable[[str], None]

#: The variable the ``scriptorium`` command reads (this module reads no environment) for its crash
#: test hook: the name of a step at which the process kills itself (SIGKILL), so crash tests can
#: stop a real process at an exact point; ``step@N`` names the N-th time (see :func:`crash_at`).
CRASH_ENV = "SCRIPTORIUM_BATCH_CRASH_AT"

#: Polling backs off from ``poll_s`` by this factor up to :data:`MAX_POLL_S`.
BACKOFF = 1.5
MAX_POLL_S = 60.0
#: Sleeps are cut in slices this long, to check ``stop_requested`` and call ``heartbeat``.
_SLICE_S = 0.5

ProviderFactory = Callable[[LLMRequest, BatchLimits | None, RetryHooks], BatchProvider]


def crash_at(wanted: str) -> StepHook:
    """The crash test hook: a :data:`StepHook` that kills this process outright (SIGKILL) when it
    reaches the step ``wanted`` names (``step``, or ``step@N`` for the N-th time)."""
    name, _, nth = wanted.partition("@")
    times = int(nth or 1)
    reached = 0

    def hook(step: str) -> None:
        nonlocal reached
        if step != name:
            return
        reached += 1
        if reached == times:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def _no_step(step: str) -> None:
    """The step hook of a job given none."""


def custom_id_of(request_hash: str) -> str:
    """The provider's ``custom_id`` for a request: its hash's 64 hex digits."""
    return request_hash.removeprefix("sha256:")


def batch_apis(registry: Registry) -> ProviderFactory:
    """The factory opening the batch API of a request's provider, as ``registry``'s spec for it
    says (``InvalidRequestError`` for a provider without one)."""

    def open_provider(
        request: LLMRequest, limits: BatchLimits | None, hooks: RetryHooks
    ) -> BatchProvider:
        name = request.target.provider
        spec = registry.find(name)
        if spec is None or spec.batches is None:
            able = [n for n in registry.names() if (s := registry.find(n)) and s.batches]
            raise InvalidRequestError(
                f"provider batches need a provider with a batch API ({', '.join(able)}), "
                f"not {name!r}",
                field="profile",
            )
        return spec.batches(request, limits, hooks)

    return open_provider


@dataclass(frozen=True, eq=False)
class BatchStatus:
    """Where a job stands. ``state`` is ``in_progress`` until every chunk has ended; the status
    also compares equal to (and prints as) that word, so ``job.status() == "ended"`` reads
    naturally."""

    state: Literal["in_progress", "ended"]
    rows: int
    requests: int
    chunks: int
    chunks_ended: int
    #: Whether a chunk's submission is still in doubt (being looked up).
    in_doubt: bool

    def _fields(self) -> tuple[object, ...]:
        return (self.state, self.rows, self.requests, self.chunks, self.chunks_ended, self.in_doubt)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return self.state == other
        if isinstance(other, BatchStatus):
            return self._fields() == other._fields()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.state)

    def __str__(self) -> str:
        return self.state


@dataclass(frozen=True)
class _Prepared:
    request: RunRequest
    llm_request: LLMRequest
    custom_id: str


class BatchJob:
    """One provider batch job over many run requests.

    Built by :func:`submit` (``Engine.submit_batch``) or :func:`resume` (``Engine.resume_batch``).
    ``wait`` polls until every chunk has ended; ``results`` gives one ``RunResult`` or error per
    request, in input order. The state is saved to ``store`` (when given) before and after every
    submission and after every change. ``on_step`` (default: nothing) is told each step reached.
    """

    def __init__(
        self,
        *,
        runner: Runner,
        state: BatchState,
        rows: Sequence[_Prepared | ScriptoriumError],
        provider: BatchProvider | None,
        store: StateFile | None,
        hooks: RetryHooks,
        wall: Callable[[], float] = time.time,
        on_step: StepHook | None = None,
    ) -> None:
        self._runner = runner
        self._on_step = on_step or _no_step
        self._state = state
        self._rows = list(rows)
        self._provider = provider
        self._store = store
        self._hooks = hooks
        self._wall = wall
        self._entries: dict[str, Entry] = {}
        self._fetched: dict[str, dict[str, RowResult]] = {}
        self._resend = False
        self._by_id = {r.custom_id: r for r in self._rows if isinstance(r, _Prepared)}

    # --- the public face ---------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The job's id (also the prefix of every chunk's tag)."""
        return self._state.job_id

    @property
    def state(self) -> dict[str, Any]:
        """The job's state as saved (JSON-ready); ``Engine.resume_batch`` takes it back."""
        return self._state.to_json()

    def status(self) -> BatchStatus:
        """Ask the provider once about every running chunk, and say where the job stands."""
        with self._connected():
            self._advance()
        return self._status()

    def wait(self, poll_s: float = 15.0) -> BatchJob:
        """Poll until every chunk has ended: every ``poll_s`` seconds at first, backing off to 60
        (or ``poll_s`` if longer). ``stop_requested`` (checked every half second of sleep, with
        ``heartbeat``) stops the wait with ``LLMGenerateError(reason="cancelled")``; the job can
        be waited on or resumed later."""
        if poll_s <= 0:
            raise InvalidRequestError("poll_s must be positive", field="poll_s")
        delay = poll_s
        ceiling = max(MAX_POLL_S, poll_s)
        with self._connected():
            while not self._advance():
                self._sleep(delay)
                delay = min(ceiling, delay * BACKOFF)
        return self

    def results(self) -> list[RunResult | ScriptoriumError]:
        """One ``RunResult`` (or the row's error) per request, in input order. Waits first when
        the job has not ended."""
        with self._connected():
            if not self._advance():
                self.wait()
            latest = machine.latest_chunks(self._state)
            return [self._result(row, latest) for row in self._rows]

    def cancel(self) -> None:
        """Ask the provider to cancel every running chunk; their unrun rows end ``canceled`` and
        are sent again on resume."""
        provider = self._need_provider()
        with self._connected():
            for chunk in self._state.chunks:
                if chunk.phase == "submitted" and chunk.batch_id is not None:
                    provider.cancel(chunk.batch_id)

    # --- driving the machine -----------------------------------------------------------------

    @contextlib.contextmanager
    def _connected(self) -> Iterator[None]:
        """Connections are closed after each public call: a job may wait a day between two."""
        try:
            yield
        finally:
            if self._provider is not None:
                self._provider.close()

    def _save(self) -> None:
        if self._store is not None:
            self._store.save(self._state)

    def _need_provider(self) -> BatchProvider:
        if self._provider is None:
            raise InvalidRequestError("the batch has no rows to send", field="requests")
        return self._provider

    def _entry(self, custom_id: str) -> Entry:
        entry = self._entries.get(custom_id)
        if entry is None:
            prepared = self._by_id[custom_id]
            entry = self._entries[custom_id] = self._need_provider().entry(
                custom_id, prepared.llm_request
            )
        return entry

    def _advance(self) -> bool:
        """Do everything that needs no waiting (look up, submit, one poll round); True once
        every chunk has ended."""
        while True:
            pending = machine.unsent(self._state, resend_unfinished=self._resend)
            entries = {c: self._entry(c) for c in pending}
            provider_limits = self._provider.limits if self._provider else BatchLimits(1, 1)
            step = machine.next_step(
                self._state, entries, provider_limits, resend_unfinished=self._resend
            )
            if isinstance(step, machine.Done):
                return True
            if isinstance(step, machine.Lookup):
                if not self._lookup(step.chunk):
                    return False
            elif isinstance(step, machine.Submit):
                chunk = machine.begin_chunk(self._state, step.custom_ids, self._wall())
                self._save()
                self._send(chunk)
            else:
                return self._poll(step.chunks)

    def _send(self, chunk: Chunk) -> None:
        provider = self._need_provider()
        entries = [self._entry(c) for c in chunk.custom_ids]
        self._on_step("before-submit")
        remote = provider.create(entries, chunk.tag)
        self._on_step("after-submit")
        machine.submitted(chunk, remote.id)
        self._save()
        # Sent rows' bodies are not needed again unless a row must be resent (rebuilt then).
        for custom_id in chunk.custom_ids:
            self._entries.pop(custom_id, None)

    def _lookup(self, chunk: Chunk) -> bool:
        """Settle the in-doubt chunk; False while it cannot be settled yet."""
        provider = self._need_provider()
        candidates = provider.recent(chunk.started_at - machine.CLOCK_SKEW_S)
        found = machine.match_in_doubt(self._state, chunk, candidates, tagged=provider.tagged)
        if found == "undecided":
            # Several could be ours: the ended ones are told apart by their custom ids; the
            # others are asked again (their status may have moved since the listing).
            fresh = [b if b.ended else provider.retrieve(b.id) for b in candidates]
            ids_of = {b.id: frozenset(self._fetch(b.id)) for b in fresh if b.ended}
            found = machine.match_in_doubt(
                self._state, chunk, candidates, tagged=provider.tagged, ids_of=ids_of
            )
        if found == "undecided":
            return False
        if found is None:
            machine.lost(chunk, self._wall())
            self._save()
            self._send(chunk)
        else:
            machine.adopt(chunk, found)
            self._save()
        return True

    def _poll(self, chunks: Sequence[Chunk]) -> bool:
        provider = self._need_provider()
        running = False
        for chunk in chunks:
            assert chunk.batch_id is not None
            remote = provider.retrieve(chunk.batch_id)
            if not remote.ended:
                running = True
                continue
            rows = self._fetch(chunk.batch_id)
            unfinished = [
                c
                for c in chunk.custom_ids
                if c not in rows or rows[c].kind in ("expired", "canceled")
            ]
            machine.ended(chunk, unfinished)
            self._save()
        if running:
            self._on_step("in-progress")
            return False
        return all(c.phase == "ended" for c in self._state.chunks) and not machine.unsent(
            self._state, resend_unfinished=self._resend
        )

    def _fetch(self, batch_id: str) -> dict[str, RowResult]:
        rows = self._fetched.get(batch_id)
        if rows is None:
            listed = self._need_provider().results(batch_id)
            rows = self._fetched[batch_id] = {r.custom_id: r for r in listed}
        return rows

    def _sleep(self, seconds: float) -> None:
        hooks = self._hooks
        left = seconds
        while True:
            if hooks.stop_requested is not None and hooks.stop_requested():
                raise LLMGenerateError(
                    "stopped while waiting for the provider batch; resume it later",
                    reason="cancelled",
                    retryable=True,
                )
            if hooks.heartbeat is not None:
                hooks.heartbeat()
            if left <= 0:
                return
            step = min(_SLICE_S, left)
            hooks.sleep(step)
            left -= step

    def _status(self) -> BatchStatus:
        chunks = self._state.chunks
        ended_count = sum(1 for c in chunks if c.phase == "ended")
        done = ended_count == len(chunks) and not machine.unsent(
            self._state, resend_unfinished=self._resend
        )
        return BatchStatus(
            state="ended" if done else "in_progress",
            rows=len(self._rows),
            requests=len(self._state.distinct_ids()),
            chunks=len(chunks),
            chunks_ended=ended_count,
            in_doubt=any(c.phase == "submitting" for c in chunks),
        )

    # --- results -----------------------------------------------------------------------------

    def _result(
        self, row: _Prepared | ScriptoriumError, latest: Mapping[str, Chunk]
    ) -> RunResult | ScriptoriumError:
        if isinstance(row, ScriptoriumError):
            return row
        provider = self._need_provider()
        chunk = latest.get(row.custom_id)
        if chunk is None or chunk.phase != "ended" or chunk.batch_id is None:
            return LLMGenerateError(
                "the provider batch holding this request has not ended",
                reason="timeout",
                retryable=True,
                provider=provider.name,
            )
        found = self._fetch(chunk.batch_id).get(row.custom_id)
        if found is None:
            # Not in the batch we took for this chunk: only possible after a tagless lookup
            # matched another batch of the same size; resuming sends it again.
            found = RowResult(row.custom_id, "expired")
        outcome = found
        try:
            result = self._runner.run_answered(
                row.request, lambda request: provider.response(request, outcome)
            )
        except ScriptoriumError as err:
            return err
        if custom_id_of(result.prepared.request_hash) != row.custom_id:
            return InvalidRequestError(
                "the request changed (prompt, profile or inputs) after it was sent in the batch",
                prompt_id=row.request.prompt_id,
            )
        return result


# --- building jobs -------------------------------------------------------------------------------


def _prepare(runner: Runner, requests: Sequence[RunRequest]) -> list[_Prepared | ScriptoriumError]:
    rows: list[_Prepared | ScriptoriumError] = []
    for request in requests:
        try:
            prepared, llm_request = runner.request_for(request)
        except ScriptoriumError as err:
            rows.append(err)
            continue
        rows.append(_Prepared(request, llm_request, custom_id_of(prepared.request_hash)))
    return rows


def _provider_for(
    rows: Sequence[_Prepared | ScriptoriumError],
    limits: BatchLimits | None,
    hooks: RetryHooks,
    factory: ProviderFactory,
) -> BatchProvider | None:
    """One batch API for every row: they must share provider, endpoint and key."""
    prepared = [r for r in rows if isinstance(r, _Prepared)]
    if not prepared:
        return None
    first = prepared[0].llm_request

    def where(request: LLMRequest) -> tuple[str, str | None, str]:
        key = request.api_key.get_secret_value() if request.api_key is not None else ""
        return request.target.provider, request.target.endpoint, key

    if any(where(p.llm_request) != where(first) for p in prepared[1:]):
        raise InvalidRequestError(
            "one provider batch needs every request on the same provider, endpoint and key",
            field="requests",
        )
    return factory(first, limits, hooks)


def _stored(request: RunRequest) -> dict[str, Any]:
    # Never the key: a resumed job takes it from the environment again, or from api_key=.
    return request.model_dump(mode="json", exclude={"api_key"})


def submit(
    runner: Runner,
    requests: Sequence[RunRequest],
    *,
    store: StateFile | None = None,
    limits: BatchLimits | None = None,
    hooks: RetryHooks | None = None,
    factory: ProviderFactory,
    on_step: StepHook | None = None,
) -> BatchJob:
    """Prepare ``requests`` and send them as provider batches (see the module doc);
    ``on_step`` is told each step the job reaches (see :data:`StepHook`)."""
    hooks = hooks or RetryHooks()
    for request in requests:
        if not isinstance(request, RunRequest):
            raise InvalidRequestError("submit_batch takes RunRequests", field="requests")
    rows = _prepare(runner, requests)
    provider = _provider_for(rows, limits, hooks, factory)
    state = BatchState(
        job_id=f"sb{uuid.uuid4().hex[:22]}",
        provider=provider.name if provider is not None else "",
        rows=[
            Row(_stored(request), row.custom_id if isinstance(row, _Prepared) else None)
            for request, row in zip(requests, rows, strict=True)
        ],
    )
    job = BatchJob(
        runner=runner,
        state=state,
        rows=rows,
        provider=provider,
        store=store,
        hooks=hooks,
        on_step=on_step,
    )
    job._save()
    with job._connected():
        job._advance()
    return job


def resume(
    runner: Runner,
    saved: BatchState | StateFile | Mapping[str, Any],
    *,
    limits: BatchLimits | None = None,
    hooks: RetryHooks | None = None,
    api_key: str | None = None,
    factory: ProviderFactory,
    on_step: StepHook | None = None,
) -> BatchJob:
    """The job ``saved`` describes, carried on: an in-doubt chunk is looked up, unsent rows are
    sent, and rows that expired or were canceled are sent again. Every row must still prepare to
    the request it was sent as (``InvalidRequestError`` otherwise). ``on_step`` as for
    :func:`submit`."""
    hooks = hooks or RetryHooks()
    store: StateFile | None = None
    if isinstance(saved, StateFile):
        store = saved
        state = saved.load()
    elif isinstance(saved, BatchState):
        state = saved
    else:
        with translate(InvalidRequestError, "not a batch state", field="state"):
            state = BatchState.from_json(saved)
    with translate(InvalidRequestError, "a stored request is invalid", field="state"):
        requests = [
            RunRequest.model_validate(
                {**row.request, **({"api_key": api_key} if api_key is not None else {})}
            )
            for row in state.rows
        ]
    rows = _prepare(runner, requests)
    for index, (row, stored) in enumerate(zip(rows, state.rows, strict=True)):
        if stored.custom_id is None:
            if isinstance(row, _Prepared):  # it failed to prepare when the job was submitted
                rows[index] = InvalidRequestError(
                    "this request could not be prepared when the batch was submitted",
                    field="requests",
                )
            continue
        custom_id = row.custom_id if isinstance(row, _Prepared) else None
        if custom_id != stored.custom_id:
            raise InvalidRequestError(
                "the batch's requests changed (prompt, profile, inputs or artifacts) since it "
                "was submitted; finish it with the old files or start a new batch",
                field="state",
            )
    provider = _provider_for(rows, limits, hooks, factory)
    job = BatchJob(
        runner=runner,
        state=state,
        rows=rows,
        provider=provider,
        store=store,
        hooks=hooks,
        on_step=on_step,
    )
    job._resend = True
    with job._connected():
        job._advance()
    return job
