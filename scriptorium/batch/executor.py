"""Driving a batch executor: picking one by name, and running requests on one.

The driver (``scriptorium batch``, :func:`run_many`) parses rows, prepares each one (for its
``request_hash``, its profile and its estimate), skips rows already done, writes the journal and the
output file, and shows progress. An executor only runs the rows it is given, through the
:class:`~scriptorium.batch.work.RowWork` it is handed, and gives each outcome back as it finishes;
it never writes a file. :class:`~scriptorium.batch.local.LocalExecutor` (a thread pool, the
default) and :class:`~scriptorium.batch.ray.RayExecutor` (a Ray cluster) both honour the profile's
``limits`` through the same :class:`~scriptorium.limits.budget.RateBudget`.

``Row``, ``Deliver``, ``BatchExecutor`` and ``profile_limits`` live in
:mod:`scriptorium.batch.work` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

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
    "profile_limits",
    "run_many",
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


def run_many(
    work: RowWork,
    requests: Iterable[RunRequest],
    *,
    executor: BatchExecutor,
    concurrency: int = 8,
) -> list[RunResult | ScriptoriumError]:
    """Run every request on ``executor``; outcomes in input order, a failed item's error in its
    slot (a request that cannot be prepared fails without reaching the executor)."""
    if concurrency < 1:
        raise InvalidRequestError("concurrency must be at least 1", field="concurrency")
    items = list(requests)
    outcomes: list[RunResult | ScriptoriumError | None] = [None] * len(items)
    rows: list[Row] = []
    for index, request in enumerate(items):
        try:
            rows.append(Row(index, request, work.prepare(request)))
        except ScriptoriumError as err:
            outcomes[index] = err

    def deliver(row: Row, outcome: RunResult | ScriptoriumError) -> None:
        outcomes[row.index] = outcome

    if rows:
        executor.execute(work, rows, deliver, concurrency=concurrency)
    done: list[RunResult | ScriptoriumError] = []
    for outcome in outcomes:
        assert outcome is not None, "an executor finished without delivering every row"
        done.append(outcome)
    return done
