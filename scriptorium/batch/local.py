"""The local executor: rows run on a thread pool in this process (each run is mostly waiting on the
network), drawing from a :class:`~scriptorium.limits.local.LocalLimiter` when the profile sets
``limits``. The default executor of ``scriptorium batch`` and ``Engine.run_many``."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

from scriptorium.batch.work import Deliver, Row, RowWork, profile_limits
from scriptorium.errors import ScriptoriumError
from scriptorium.limits.budget import DEFAULT_WINDOW_S
from scriptorium.limits.estimates import estimate, real_usage
from scriptorium.limits.hooks import guarded
from scriptorium.limits.limiter import Limiter, Stopped
from scriptorium.limits.local import LocalLimiter

if TYPE_CHECKING:
    from scriptorium.usecase.model import RunResult

__all__ = ["LocalExecutor", "run_row"]


class LocalExecutor:
    """Runs rows on ``concurrency`` threads. ``window_s`` and ``margin_s`` shape the rate
    windows (see :class:`~scriptorium.limits.budget.RateBudget`; tests shorten them)."""

    def __init__(self, *, window_s: float = DEFAULT_WINDOW_S, margin_s: float | None = None):
        self.window_s = window_s
        self.margin_s = margin_s

    def execute(
        self, work: RowWork, rows: Sequence[Row], deliver: Deliver, *, concurrency: int
    ) -> None:
        """Run every row; see :class:`~scriptorium.batch.work.BatchExecutor`."""
        limiter = LocalLimiter(
            profile_limits(work, rows), window_s=self.window_s, margin_s=self.margin_s
        )

        def one(row: Row) -> None:
            try:
                outcome = run_row(work, row, limiter)
            except Stopped:
                return  # never started: the next attempt runs it
            deliver(row, outcome)

        pool = ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(rows))))
        try:
            futures: list[Future[None]] = [pool.submit(one, row) for row in rows]
            finished, _ = wait(futures, return_when=FIRST_EXCEPTION)
            for future in finished:
                future.result()  # a bug in deliver surfaces here
        except BaseException:
            # Ctrl-C or a bug: start nothing new, release rows waiting for the limiter, and let
            # the calls in flight finish and be delivered, so what they cost is kept.
            limiter.close()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)


def run_row(work: RowWork, row: Row, limiter: Limiter) -> RunResult | ScriptoriumError:
    """Run one row under ``limiter``: wait until its budget has room, take the grant just before
    the first request (transport retries take their own), settle with the real usage after.
    Raises :class:`~scriptorium.limits.limiter.Stopped` when the batch stops before the row was
    sent."""
    profile = row.prepared.profile
    need = estimate(row.prepared)
    limiter.ready(profile, need)
    with guarded(limiter, profile, need) as gate:
        try:
            result = work.run(row.request)
        except ScriptoriumError as err:
            if gate.stopped:
                raise Stopped from err
            return err
        # A client without the retry loop (fake, replay, a custom one) never asked: count the
        # call now, so the budget paces the rows that follow.
        gate.take()
    limiter.settle(profile, gate.ticket, real_usage(result))
    return result
