"""The provider-independent half of the fake batch endpoints: batches, their rows, and the script
that decides how long a batch runs and how each row ends.

A batch is created with its rows (``custom_id`` and the request body a run would send) and stays
``in progress`` for :attr:`FakeBatches.polls_before_end` retrievals of that batch; then it ends and
every row gets its outcome, once: ``expired`` or ``canceled`` when a scripted rule says so (a rule
fires ``times`` times per custom id, so a resubmitted row can succeed), ``errored`` when an error
rule matches, else ``succeeded`` with whatever the server would answer that body as a plain
request. Results are listed out of input order (reversed, or shuffled with ``seed``), as the real
APIs warn they may be.

``FakeAnthropicServer.batches`` and ``FakeOpenAIServer.batches`` are instances; the wire shapes
live in :mod:`scriptorium._testing.anthropic_batches` and :mod:`scriptorium._testing.openai_batches`.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["FakeBatch", "FakeBatches", "RowOutcome", "RowRule"]

Outcome = Literal["succeeded", "errored", "expired", "canceled"]

#: Which rows a rule applies to: ``match(custom_id, body)``.
Match = Callable[[str, Any], bool]


@dataclass(frozen=True)
class RowOutcome:
    """How one row ended. ``status``/``body`` are the HTTP answer a plain request would have got
    (succeeded and errored rows); expired and canceled rows have neither."""

    custom_id: str
    outcome: Outcome
    status: int = 200
    body: Any = None


@dataclass
class RowRule:
    """A scripted outcome for the rows ``match`` selects, at most ``times`` times per custom id
    (None: always)."""

    match: Match
    outcome: Outcome
    status: int = 400
    body: Any = None
    times: int | None = None
    fired: Counter[str] = field(default_factory=Counter)

    def applies(self, custom_id: str, body: Any) -> bool:
        if self.times is not None and self.fired[custom_id] >= self.times:
            return False
        if not self.match(custom_id, body):
            return False
        self.fired[custom_id] += 1
        return True


@dataclass
class FakeBatch:
    """One batch on the fake provider."""

    id: str
    rows: list[tuple[str, Any]]
    created_at: float
    metadata: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    polls: int = 0
    cancel_requested: bool = False
    ended_at: float | None = None
    results: list[RowOutcome] = field(default_factory=list)

    @property
    def ended(self) -> bool:
        return self.ended_at is not None

    @property
    def custom_ids(self) -> list[str]:
        return [custom_id for custom_id, _ in self.rows]

    def counts(self) -> Counter[str]:
        """Rows per outcome (``processing`` while the batch runs)."""
        if not self.ended:
            return Counter({"processing": len(self.rows)})
        return Counter(r.outcome for r in self.results)


class FakeBatches:
    """The batches one fake server holds, and the script for how they end.

    ``answer(custom_id, body)`` gives a succeeded row's ``(status, body)`` as the server would
    answer that request; a non-200 status makes the row ``errored`` with that body.
    """

    def __init__(self, prefix: str, answer: Callable[[str, Any], tuple[int, Any]]) -> None:
        self._prefix = prefix
        self._answer = answer
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._batches: dict[str, FakeBatch] = {}
        self._rules: list[RowRule] = []
        #: Retrievals of a batch that still answer "in progress" before it ends.
        self.polls_before_end = 1
        #: Result order: ``"reversed"``, ``"shuffled"`` (with :attr:`seed`) or ``"input"``.
        self.order: Literal["reversed", "shuffled", "input"] = "reversed"
        self.seed = 0
        #: Seconds each batch endpoint call waits before answering (a slow provider).
        self.delay_s = 0.0
        #: ``text(custom_id, body)``: a succeeded row's text (None: the server's default answer).
        self.text: Callable[[str, Any], str] | None = None

    # --- scripting ---------------------------------------------------------------------------

    def error_rows(
        self,
        match: Match,
        *,
        status: int = 400,
        body: Any = None,
        times: int | None = None,
    ) -> None:
        """Rows ``match`` selects end ``errored`` with ``status`` and ``body`` (a provider-shaped
        error when None)."""
        self._rules.append(RowRule(match, "errored", status, body, times))

    def expire_rows(self, match: Match, *, times: int | None = 1) -> None:
        """Rows ``match`` selects end ``expired`` (the first ``times`` times each is submitted)."""
        self._rules.append(RowRule(match, "expired", times=times))

    def cancel_rows(self, match: Match, *, times: int | None = 1) -> None:
        """Rows ``match`` selects end ``canceled`` (the first ``times`` times each is submitted)."""
        self._rules.append(RowRule(match, "canceled", times=times))

    def clear(self) -> None:
        """Forget every batch and rule and restore the defaults."""
        with self._lock:
            self._batches.clear()
            self._rules.clear()
        self.polls_before_end = 1
        self.order = "reversed"
        self.delay_s = 0.0
        self.text = None

    # --- what happened -----------------------------------------------------------------------

    @property
    def created(self) -> list[FakeBatch]:
        """Every batch created, oldest first."""
        with self._lock:
            return list(self._batches.values())

    def submitted_ids(self) -> list[str]:
        """Every custom id submitted, in submission order, repeats included."""
        return [custom_id for batch in self.created for custom_id in batch.custom_ids]

    # --- for the wire layers -----------------------------------------------------------------

    def wait(self) -> None:
        if self.delay_s:
            time.sleep(self.delay_s)

    def create(
        self,
        rows: list[tuple[str, Any]],
        *,
        metadata: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> FakeBatch:
        with self._lock:
            ident = f"{self._prefix}{next(self._ids):04d}"
            batch = FakeBatch(ident, rows, time.time(), dict(metadata or {}), dict(extra or {}))
            self._batches[ident] = batch
            return batch

    def get(self, ident: str) -> FakeBatch | None:
        with self._lock:
            return self._batches.get(ident)

    def newest_first(self) -> list[FakeBatch]:
        with self._lock:
            return list(reversed(self._batches.values()))

    def poll(self, batch: FakeBatch) -> FakeBatch:
        """One retrieval: the batch ends once it has been polled enough (or was canceled)."""
        with self._lock:
            if batch.ended:
                return batch
            batch.polls += 1
            if batch.cancel_requested or batch.polls > self.polls_before_end:
                self._end(batch)
            return batch

    def cancel(self, batch: FakeBatch) -> FakeBatch:
        with self._lock:
            if not batch.ended:
                batch.cancel_requested = True
            return batch

    def ordered(self, batch: FakeBatch) -> list[RowOutcome]:
        """The batch's results in the scripted (not input) order."""
        results = list(batch.results)
        if self.order == "reversed":
            results.reverse()
        elif self.order == "shuffled":
            random.Random(self.seed).shuffle(results)
        return results

    def _end(self, batch: FakeBatch) -> None:
        results = []
        for custom_id, body in batch.rows:
            if batch.cancel_requested:
                results.append(RowOutcome(custom_id, "canceled"))
                continue
            rule = next((r for r in self._rules if r.applies(custom_id, body)), None)
            if rule is not None and rule.outcome in ("expired", "canceled"):
                results.append(RowOutcome(custom_id, rule.outcome))
            elif rule is not None:
                results.append(RowOutcome(custom_id, "errored", rule.status, rule.body))
            else:
                status, answer = self._answer(custom_id, body)
                outcome: Outcome = "succeeded" if status == 200 else "errored"
                results.append(RowOutcome(custom_id, outcome, status, answer))
        batch.results = results
        batch.ended_at = time.time()
