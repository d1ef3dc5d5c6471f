"""What a batch executor is given: the rows, and the row work that runs them.

An executor never sees the Engine. It gets a :class:`RowWork`, a narrow port the composition root
hands out (``Engine.row_work()``): plan a request, run that plan (or a request from scratch, in
another process), the rate limits of a profile, and a :class:`Recipe` from which another process
builds the same work again (what the Ray executor sends to its workers instead of the engine's
attributes).

Rows reach an executor as an iterable it pulls from as slots free up (the driver prepares each row
as it is pulled, and may make the pull wait while its output window is full), so an executor never
lists them: the profiles' limits are asked for as each profile is first seen
(:class:`ProfileLimits`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from scriptorium.errors import ScriptoriumError

if TYPE_CHECKING:
    from scriptorium.profile.model import RateLimits
    from scriptorium.usecase.model import PreparedRun, RunRequest, RunResult
    from scriptorium.usecase.plan import Plan

__all__ = [
    "BatchExecutor",
    "Deliver",
    "ProfileLimits",
    "Recipe",
    "Row",
    "RowWork",
    "profile_limits",
]


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

    def plan(self, request: RunRequest, /) -> Plan:
        """The request's whole plan, made once by the driver: its ``prepared`` gives the row's
        hash, profile and estimate, and :meth:`run_plan` runs it without preparing again."""
        ...

    def run(self, request: RunRequest, /) -> RunResult:
        """Run the request: prepare, call, validate, repair as configured; sentinel errors."""
        ...

    def run_plan(self, request: RunRequest, plan: Plan, /) -> RunResult:
        """Run ``request`` from ``plan`` (made by :meth:`plan` in this process): call, validate,
        repair as configured; sentinel errors."""
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
    """One row to run: its position in the driver's input, the request, its prepared form, and
    the plan it was prepared from (None: the row is run from its request, preparing it again,
    as on a Ray worker, where the plan cannot travel: it holds the key)."""

    index: int
    request: RunRequest
    prepared: PreparedRun
    plan: Plan | None = None


#: Called once per row as it finishes (from any thread of the driver process).
Deliver = Callable[["Row", "RunResult | ScriptoriumError"], None]


class BatchExecutor(Protocol):
    """Runs rows and delivers each outcome once, as it finishes."""

    def execute(
        self, work: RowWork, rows: Iterable[Row], deliver: Deliver, *, concurrency: int
    ) -> None:
        """Run every row through ``work`` with at most ``concurrency`` in flight, calling
        ``deliver`` once per row. ``rows`` is pulled one row at a time as a slot frees up (never
        listed: it may be endless, and a pull may wait for the driver). On an exception in the
        driver (Ctrl-C), start no new row, let the rows in flight finish and deliver them, then
        re-raise; rows not started are not delivered."""
        ...


def profile_limits(work: RowWork, rows: Iterable[Row]) -> dict[str, RateLimits]:
    """The ``limits`` of every profile the rows use (profiles without limits left out)."""
    found: dict[str, RateLimits] = {}
    for name in sorted({row.prepared.profile for row in rows}):
        limits = work.limits(name)
        if limits is not None and limits.given():
            found[name] = limits
    return found


class ProfileLimits:
    """The profiles' limits as rows arrive: :meth:`first_seen` asks ``work`` once per profile and
    hands a profile that sets limits to ``allow`` (the executor's limiter takes its budget) before
    the first row of it starts."""

    __slots__ = ("_allow", "_limited", "_seen", "_work")

    def __init__(self, work: RowWork, allow: Callable[[str, RateLimits], None]) -> None:
        self._work = work
        self._allow = allow
        self._seen: set[str] = set()
        self._limited: set[str] = set()

    def first_seen(self, row: Row) -> None:
        """Note ``row``'s profile; the first time, ask its limits and allow them."""
        name = row.prepared.profile
        if name in self._seen:
            return
        self._seen.add(name)
        limits = self._work.limits(name)
        if limits is not None and limits.given():
            self._allow(name, limits)
            self._limited.add(name)

    def limited(self, profile: str) -> bool:
        """Whether ``profile`` sets limits (known once a row of it was seen)."""
        return profile in self._limited
