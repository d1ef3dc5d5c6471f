"""The limiter port: what a worker asks before each call and tells after it, whoever holds the
budgets (:class:`~scriptorium.limits.local.LocalLimiter` in this process,
:class:`~scriptorium.limits.ray.ActorLimiter` over a Ray actor)."""

from __future__ import annotations

from typing import Protocol

from scriptorium.limits.budget import Estimate

__all__ = ["Limiter", "Stopped"]


class Stopped(Exception):
    """The batch is stopping (Ctrl-C): a row still waiting for its grant is not started."""


class Limiter(Protocol):
    """What a worker asks before each call and tells after it (blocking; keyed by profile)."""

    def ready(self, profile: str, need: Estimate) -> None:
        """Block until ``need`` would be granted, without taking it (the long waits happen
        here, before the call's own time budget starts). Raises :class:`Stopped`."""
        ...

    def acquire(self, profile: str, need: Estimate, *, delay_s: float = 0.0) -> int:
        """Block until ``need`` fits the profile's budgets; the grant's ticket. Raises
        :class:`Stopped` once the batch is stopping."""
        ...

    def settle(self, profile: str, ticket: int, used: Estimate) -> None:
        """Replace the grant's estimate with real usage."""
        ...

    def pause(self, profile: str, seconds: float) -> None:
        """Pause every worker of the profile (a 429's retry-after)."""
        ...
