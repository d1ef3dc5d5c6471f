"""Resume, proven by simulation: a process killed at any provider call (before it is made, or
after it was made and before anything else happened) and started again from its saved state,
as often as it takes, ends with every row answered and every distinct request submitted once."""

from __future__ import annotations

import json
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scriptorium import Engine, RunRequest
from scriptorium.batch.job import resume, submit
from scriptorium.batch.store import StateFile
from scriptorium.llm.batches import BatchLimits, Entry, RemoteBatch, RowResult
from scriptorium.llm.model import LLMRequest, LLMResponse
from scriptorium.llm.retry import RetryHooks
from scriptorium.usecase.model import RunResult

PROMPT = """---
profile: offline
inputs: {type: object, required: [n], properties: {n: {type: integer}}}
output:
  format: json
---
Number {{ n }}
"""


class Killed(BaseException):
    """The simulated SIGKILL: not an Exception, so nothing on the way catches it."""


class MemoryBatches:
    """A batch provider in memory that can kill its caller at the N-th call."""

    name = "anthropic"

    def __init__(self, *, tagged: bool, limits: BatchLimits) -> None:
        self.tagged = tagged
        self.limits = limits
        self.batches: dict[str, tuple[list[str], str, float]] = {}
        self.polls: dict[str, int] = {}
        self.calls = 0
        self.kill_at: int | None = None
        self.kill_after = False

    def _call(self) -> None:
        self.calls += 1
        if self.calls == self.kill_at and not self.kill_after:
            raise Killed

    def _done(self) -> None:
        if self.calls == self.kill_at and self.kill_after:
            raise Killed

    def entry(self, custom_id: str, request: LLMRequest) -> Entry:
        return Entry(custom_id, {"custom_id": custom_id}, 10)

    def _remote(self, batch_id: str) -> RemoteBatch:
        ids, tag, created = self.batches[batch_id]
        ended = self.polls[batch_id] >= 2
        return RemoteBatch(batch_id, ended, created, len(ids), tag if self.tagged else None)

    def create(self, entries: list[Entry], tag: str) -> RemoteBatch:
        self._call()
        batch_id = f"b{len(self.batches)}"
        self.batches[batch_id] = ([e.custom_id for e in entries], tag, time.time())
        self.polls[batch_id] = 0
        self._done()
        return self._remote(batch_id)

    def retrieve(self, batch_id: str) -> RemoteBatch:
        self._call()
        self.polls[batch_id] += 1
        self._done()
        return self._remote(batch_id)

    def recent(self, since: float) -> list[RemoteBatch]:
        self._call()
        self._done()
        return [self._remote(b) for b in reversed(self.batches)]

    def results(self, batch_id: str) -> list[RowResult]:
        self._call()
        self._done()
        return [RowResult(c, "succeeded") for c in self.batches[batch_id][0]]

    def cancel(self, batch_id: str) -> None:
        self._call()

    def close(self) -> None:
        pass

    def response(self, request: LLMRequest, row: RowResult) -> LLMResponse:
        return LLMResponse(text=json.dumps({"id": row.custom_id[:8]}))

    def submitted(self) -> list[str]:
        return [c for ids, _, _ in self.batches.values() for c in ids]


def _engine(root: Path) -> Engine:
    if not (root / "prompts").exists():
        (root / "prompts").mkdir(parents=True)
        (root / "profiles").mkdir()
        (root / "prompts" / "num.prompt.md").write_text(PROMPT, "utf-8")
        (root / "profiles" / "offline.yaml").write_text("provider: fake\nmodel: f\n", "utf-8")
    return Engine(root, retry_hooks=RetryHooks(sleep=lambda _s: None))


def _run(
    root: Path,
    numbers: list[int],
    chunk: int,
    kills: list[tuple[int, bool]],
    tagged: bool,
) -> MemoryBatches:
    """Submit, killed at each of ``kills`` in turn (call number, after the call?), resuming
    after each kill; check the outcome; return the provider."""
    engine = _engine(root)
    provider = MemoryBatches(tagged=tagged, limits=BatchLimits(chunk, 10**6))
    store = StateFile(root / "state.json")
    store.remove()
    requests = [RunRequest(prompt_id="num", inputs={"n": n}) for n in numbers]

    def factory(
        request: LLMRequest, limits: BatchLimits | None, hooks: RetryHooks
    ) -> MemoryBatches:
        return provider

    results = None
    started = False
    for kill_at, after in [*kills, (None, False)]:
        provider.calls = 0
        provider.kill_at = kill_at
        provider.kill_after = after
        try:
            if not started:
                started = True
                job = submit(engine.runner, requests, store=store, factory=factory)
            else:
                job = resume(engine.runner, store, factory=factory)
            results = job.wait(0.01).results()
            break
        except Killed:
            continue
    assert results is not None
    assert all(isinstance(r, RunResult) for r in results)
    hashes = [r.prepared.request_hash for r in results if isinstance(r, RunResult)]
    assert hashes == [engine.prepare(r).request_hash for r in requests]
    submitted = provider.submitted()
    assert sorted(submitted) == sorted({h.removeprefix("sha256:") for h in hashes})
    return provider


def test_a_kill_at_every_single_call_is_survived(tmp_path: Path) -> None:
    """Every call of an undisturbed run, killed before and after it is made, both lookups."""
    numbers = [1, 2, 1, 3, 4, 5]
    calls = _run(tmp_path / "count", numbers, 2, [], tagged=True).calls
    assert calls > 6
    for tagged in (True, False):
        for kill_at in range(1, calls + 1):
            for after in (False, True):
                root = tmp_path / f"{tagged}-{kill_at}-{after}"
                _run(root, numbers, 2, [(kill_at, after)], tagged)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    numbers=st.lists(st.integers(0, 6), min_size=1, max_size=9),
    chunk=st.integers(1, 4),
    kills=st.lists(st.tuples(st.integers(1, 10), st.booleans()), max_size=3),
    tagged=st.booleans(),
)
def test_killed_again_and_again_and_resumed_every_row_is_answered_and_sent_once(
    tmp_path: Path,
    numbers: list[int],
    chunk: int,
    kills: list[tuple[int, bool]],
    tagged: bool,
) -> None:
    root = tmp_path / f"p{abs(hash((tuple(numbers), chunk, tuple(kills), tagged)))}"
    _run(root, numbers, chunk, kills, tagged)
