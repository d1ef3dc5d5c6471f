"""Driving a batch executor: picking one by name, and running requests on one.

The driver (``scriptorium batch``, :func:`run_many`) parses rows, prepares each one once (its plan
gives the ``request_hash``, the profile and the estimate, and is what the executor runs), skips
rows already done, writes the journal and the output file, and shows progress; rows flow through
the bounded pipeline of :mod:`scriptorium.batch.pipeline`. An executor only runs the rows it is given, through the
:class:`~scriptorium.batch.work.RowWork` it is handed, and gives each outcome back as it finishes;
it never writes a file. :class:`~scriptorium.batch.local.LocalExecutor` (a thread pool, the
default) and :class:`~scriptorium.batch.ray.RayExecutor` (a Ray cluster) both honour the profile's
``limits`` through the same :class:`~scriptorium.limits.budget.RateBudget`.

``Row``, ``Deliver``, ``BatchExecutor`` and ``profile_limits`` live in
:mod:`scriptorium.batch.work` and are re-exported here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, overload

from scriptorium.batch.pipeline import ReorderWindow, Window, feed, window_size
from scriptorium.batch.work import BatchExecutor, Deliver, Row, RowWork, profile_limits
from scriptorium.errors import InvalidRequestError, ScriptoriumError

if TYPE_CHECKING:
    from scriptorium.usecase.model import RunRequest, RunResult

__all__ = [
    "EXECUTORS",
    "BatchExecutor",
    "Deliver",
    "Row",
    "executor_named",
    "plan_row",
    "profile_limits",
    "run_many",
    "stream_many",
]

#: The executors ``scriptorium batch --executor`` knows.
EXECUTORS = ("local", "ray")


def executor_named(name: str, *, address: str | None = None) -> BatchExecutor:
    """The executor for ``--executor NAME`` (``address``: the Ray cluster to join)."""
    if name == "local":
        if address is not None:
            raise InvalidRequestError("--ray-address needs --executor ray", field="ray_address")
        from scriptorium.batch.local import LocalExecutor

        return LocalExecutor()
    if name == "ray":
        from scriptorium.batch.ray import RayExecutor

        return RayExecutor(address=address)
    raise InvalidRequestError(
        f"unknown executor {name!r} (expected one of: {', '.join(EXECUTORS)})", field="executor"
    )


def plan_row(work: RowWork, index: int, request: RunRequest) -> Row | ScriptoriumError:
    """Row ``index`` of ``request``, prepared once (its plan on it), or why it cannot be."""
    try:
        plan = work.plan(request)
    except ScriptoriumError as err:
        return err
    return Row(index, request, plan.prepared, plan)


def _kept(row: Row, outcome: RunResult | ScriptoriumError) -> RunResult | ScriptoriumError:
    return outcome


@overload
def run_many(  # type: ignore[overload-overlap]  # iterators match first
    work: RowWork,
    requests: Iterator[RunRequest],
    *,
    executor: BatchExecutor,
    concurrency: int = 8,
) -> Iterator[RunResult | ScriptoriumError]: ...


@overload
def run_many(
    work: RowWork,
    requests: Iterable[RunRequest],
    *,
    executor: BatchExecutor,
    concurrency: int = 8,
) -> list[RunResult | ScriptoriumError]: ...


def run_many(
    work: RowWork,
    requests: Iterable[RunRequest],
    *,
    executor: BatchExecutor,
    concurrency: int = 8,
) -> list[RunResult | ScriptoriumError] | Iterator[RunResult | ScriptoriumError]:
    """Run every request on ``executor``; outcomes in input order, a failed item's error in its
    slot (a request that cannot be prepared fails without reaching the executor).

    Given an iterator (a generator, ``iter(...)``, a file's lines mapped to requests), the
    outcomes come back as an iterator, each as soon as it and every one before it are done, and
    no more than a reorder window of rows (:func:`~scriptorium.batch.pipeline.window_size`) is
    held at once: requests are read only as fast as outcomes are taken. Given anything else (a
    list), the list of outcomes."""
    if concurrency < 1:
        raise InvalidRequestError("concurrency must be at least 1", field="concurrency")
    if isinstance(requests, Iterator):
        return stream_many(work, requests, executor=executor, concurrency=concurrency)
    items = list(requests)
    outcomes: list[RunResult | ScriptoriumError | None] = [None] * len(items)

    def start(index: int, request: RunRequest) -> Row | None:
        started = plan_row(work, index, request)
        if isinstance(started, Row):
            return started
        outcomes[index] = started
        return None

    def deliver(row: Row, outcome: RunResult | ScriptoriumError) -> None:
        outcomes[row.index] = outcome

    rows = (row for index, request in enumerate(items) if (row := start(index, request)))
    executor.execute(work, rows, deliver, concurrency=concurrency)
    done: list[RunResult | ScriptoriumError] = []
    for outcome in outcomes:
        assert outcome is not None, "an executor finished without delivering every row"
        done.append(outcome)
    return done


def stream_many(
    work: RowWork,
    requests: Iterable[RunRequest],
    *,
    executor: BatchExecutor,
    concurrency: int = 8,
) -> Iterator[RunResult | ScriptoriumError]:
    """The outcomes of ``requests`` as an iterator, in input order, through a bounded window
    (see :func:`run_many`). The rows run on a thread of their own while the caller takes the
    outcomes; a caller that stops early (breaks out, closes the iterator, Ctrl-C) stops the
    reading, and the rows already in flight finish before the iterator is closed."""
    if concurrency < 1:
        raise InvalidRequestError("concurrency must be at least 1", field="concurrency")
    return _streamed(work, requests, executor, concurrency)


def _streamed(
    work: RowWork, requests: Iterable[RunRequest], executor: BatchExecutor, concurrency: int
) -> Iterator[RunResult | ScriptoriumError]:
    window: ReorderWindow[RunResult | ScriptoriumError] = ReorderWindow(window_size(concurrency))

    def read() -> None:
        try:
            count = feed(
                work,
                requests,
                start=lambda index, request: plan_row(work, index, request),
                finish=_kept,
                window=window,
                executor=executor,
                concurrency=concurrency,
            )
        except BaseException as err:
            window.failed(err)
        else:
            window.ended(count)

    reader = threading.Thread(target=read, name="scriptorium-run-many", daemon=True)
    reader.start()
    try:
        while True:
            try:
                yield window.take()
            except Window:
                return
    finally:
        window.stop()
        reader.join()
