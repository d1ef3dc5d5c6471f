"""The local executor: rows run on a thread pool in this process (each run is mostly waiting on the
network), drawing from a :class:`~scriptorium.limits.local.LocalLimiter` when the profile sets
``limits``. The default executor of ``scriptorium batch`` and ``Engine.run_many``.

The calling thread pulls the rows (the driver prepares each as it is pulled) and hands each to a
free worker thread; it pulls the next one only when fewer than ``concurrency`` rows are in flight,
so the rows held at any moment are the ones running, whatever the length of the input."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from scriptorium.batch.work import Deliver, ProfileLimits, Row, RowWork
from scriptorium.errors import ScriptoriumError
from scriptorium.limits.budget import DEFAULT_WINDOW_S
from scriptorium.limits.estimates import estimate, real_usage
from scriptorium.limits.hooks import guarded
from scriptorium.limits.limiter import Limiter, Stopped
from scriptorium.limits.local import LocalLimiter

if TYPE_CHECKING:
    from scriptorium.usecase.model import RunResult

__all__ = ["LocalExecutor", "run_row"]

#: How long the feeding thread waits for a free slot at a time (so Ctrl-C is noticed promptly).
_SLOT_WAIT_S = 0.5


class LocalExecutor:
    """Runs rows on ``concurrency`` threads. ``window_s`` and ``margin_s`` shape the rate
    windows (see :class:`~scriptorium.limits.budget.RateBudget`; tests shorten them)."""

    def __init__(self, *, window_s: float = DEFAULT_WINDOW_S, margin_s: float | None = None):
        self.window_s = window_s
        self.margin_s = margin_s

    def execute(
        self, work: RowWork, rows: Iterable[Row], deliver: Deliver, *, concurrency: int
    ) -> None:
        """Run every row; see :class:`~scriptorium.batch.work.BatchExecutor`."""
        limiter = LocalLimiter({}, window_s=self.window_s, margin_s=self.margin_s)
        limits = ProfileLimits(work, limiter.allow)
        slots = threading.Semaphore(concurrency)
        failed: list[BaseException] = []

        def one(row: Row) -> None:
            try:
                try:
                    outcome = run_row(work, row, limiter)
                except Stopped:
                    return  # never started: the next attempt runs it
                deliver(row, outcome)
            except BaseException as err:  # a bug in deliver: stop the batch, raise it there
                failed.append(err)
            finally:
                slots.release()

        pool = ThreadPoolExecutor(max_workers=concurrency)
        try:
            for row in rows:
                while not slots.acquire(timeout=_SLOT_WAIT_S):
                    _raise_first(failed)
                _raise_first(failed)
                limits.first_seen(row)
                pool.submit(one, row)
            # Every row is out: wait for the last ones (a slot at a time, so Ctrl-C still lands).
            for _ in range(concurrency):
                while not slots.acquire(timeout=_SLOT_WAIT_S):
                    pass
            _raise_first(failed)
        except BaseException:
            # Ctrl-C or a bug: start nothing new, release rows waiting for the limiter, and let
            # the calls in flight finish and be delivered, so what they cost is kept.
            limiter.close()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)


def _raise_first(failed: list[BaseException]) -> None:
    if failed:
        raise failed[0]


def run_row(work: RowWork, row: Row, limiter: Limiter) -> RunResult | ScriptoriumError:
    """Run one row under ``limiter``: wait until its budget has room, take the grant just before
    the first request (transport retries take their own), settle with the real usage after.
    A row that carries its plan runs that plan; one without (on a Ray worker) is prepared again
    from its request. Raises :class:`~scriptorium.limits.limiter.Stopped` when the batch stops
    before the row was sent."""
    profile = row.prepared.profile
    need = estimate(row.prepared)
    limiter.ready(profile, need)
    with guarded(limiter, profile, need) as gate:
        try:
            if row.plan is None:
                result = work.run(row.request)
            else:
                result = work.run_plan(row.request, row.plan)
        except ScriptoriumError as err:
            if gate.stopped:
                raise Stopped from err
            return err
        # A client without the retry loop (fake, replay, a custom one) never asked: count the
        # call now, so the budget paces the rows that follow.
        gate.take()
    limiter.settle(profile, gate.ticket, real_usage(result))
    return result
