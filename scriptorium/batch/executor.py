"""The batch executor seam: what turns prepared rows into results.

The driver (``scriptorium batch``, :func:`run_many`) parses rows, prepares each one (for its
``request_hash``, its profile and its estimate), skips rows already done, writes the journal and the
output file, and shows progress. An executor only runs the rows it is given and hands each outcome
back as it finishes; it never writes a file. :class:`~scriptorium.batch.local.LocalExecutor` (a
thread pool, the default) and :class:`~scriptorium.batch.ray.RayExecutor` (a Ray cluster) both
honour the profile's ``limits`` through the same :class:`~scriptorium.batch.limits.RateBudget`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from scriptorium.errors import InvalidRequestError, ScriptoriumError

if TYPE_CHECKING:
    from scriptorium.engine import Engine
    from scriptorium.profile.model import RateLimits
    from scriptorium.usecase.model import PreparedRun, RunRequest, RunResult

__all__ = [
    "EXECUTORS",
    "BatchExecutor",
    "Deliver",
    "Row",
    "executor_named",
    "profile_limits",
    "run_many",
]


@dataclass(frozen=True, slots=True)
class Row:
    """One row to run: its position in the driver's list, the request, and its prepared form."""

    index: int
    request: RunRequest
    prepared: PreparedRun


#: Called once per row as it finishes (from any thread of the driver process).
Deliver = Callable[["Row", "RunResult | ScriptoriumError"], None]


class BatchExecutor(Protocol):
    """Runs rows and delivers each outcome once, as it finishes."""

    def execute(
        self, engine: Engine, rows: Sequence[Row], deliver: Deliver, *, concurrency: int
    ) -> None:
        """Run every row with at most ``concurrency`` in flight, calling ``deliver`` once per
        row. On an exception in the driver (Ctrl-C), start no new row, let the rows in flight
        finish and deliver them, then re-raise; rows not started are not delivered."""
        ...


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


def profile_limits(engine: Engine, rows: Iterable[Row]) -> dict[str, RateLimits]:
    """The ``limits`` of every profile the rows use (profiles without limits left out)."""
    found: dict[str, RateLimits] = {}
    for name in sorted({row.prepared.profile for row in rows}):
        limits = engine.profiles.get(name).limits
        if limits is not None and limits.given():
            found[name] = limits
    return found


def run_many(
    engine: Engine,
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
            rows.append(Row(index, request, engine.prepare(request)))
        except ScriptoriumError as err:
            outcomes[index] = err

    def deliver(row: Row, outcome: RunResult | ScriptoriumError) -> None:
        outcomes[row.index] = outcome

    if rows:
        executor.execute(engine, rows, deliver, concurrency=concurrency)
    done: list[RunResult | ScriptoriumError] = []
    for outcome in outcomes:
        assert outcome is not None, "an executor finished without delivering every row"
        done.append(outcome)
    return done
