"""What a batch executor is given: the rows, and the row work that runs them.

An executor never sees the Engine. It gets a :class:`RowWork`, a narrow port the composition root
hands out (``Engine.row_work()``): prepare a request, run it, the rate limits of a profile, and a
:class:`Recipe` from which another process builds the same work again (what the Ray executor sends
to its workers instead of the engine's attributes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from scriptorium.errors import ScriptoriumError

if TYPE_CHECKING:
    from scriptorium.profile.model import RateLimits
    from scriptorium.usecase.model import PreparedRun, RunRequest, RunResult

__all__ = ["BatchExecutor", "Deliver", "Recipe", "Row", "RowWork", "profile_limits"]


@dataclass(frozen=True, slots=True)
class Recipe:
    """How a worker process builds the same row work again: ``build(**arguments)``.

    ``build`` must pickle by reference (a module-level function) and ``arguments`` hold plain
    values only (paths as text, flags, names; never a client or a key), so a recipe travels
    through pickle and, being hashable, keys a worker's cache of the work it has built.
    """

    build: Callable[..., RowWork]
    arguments: tuple[tuple[str, Any], ...] = ()

    def rebuild(self) -> RowWork:
        """The row work this recipe describes, built in this process."""
        return self.build(**dict(self.arguments))


class RowWork(Protocol):
    """What an executor needs to run rows: the use case behind a batch, and nothing else."""

    def prepare(self, request: RunRequest, /) -> PreparedRun:
        """Everything but the call (the row's hash, profile and estimate come from it)."""
        ...

    def run(self, request: RunRequest, /) -> RunResult:
        """Run the request: prepare, call, validate, repair as configured; sentinel errors."""
        ...

    def limits(self, profile: str, /) -> RateLimits | None:
        """The profile's rate ``limits`` (None when it sets none)."""
        ...

    def recipe(self) -> Recipe:
        """How another process builds this same work; ``InvalidRequestError`` when it cannot
        (it holds something that cannot or must not travel, such as an injected client)."""
        ...


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
        self, work: RowWork, rows: Sequence[Row], deliver: Deliver, *, concurrency: int
    ) -> None:
        """Run every row through ``work`` with at most ``concurrency`` in flight, calling
        ``deliver`` once per row. On an exception in the driver (Ctrl-C), start no new row, let
        the rows in flight finish and deliver them, then re-raise; rows not started are not
        delivered."""
        ...


def profile_limits(work: RowWork, rows: Iterable[Row]) -> dict[str, RateLimits]:
    """The ``limits`` of every profile the rows use (profiles without limits left out)."""
    found: dict[str, RateLimits] = {}
    for name in sorted({row.prepared.profile for row in rows}):
        limits = work.limits(name)
        if limits is not None and limits.given():
            found[name] = limits
    return found
