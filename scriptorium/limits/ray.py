"""The budgets of a batch whose workers are Ray actors: one :class:`LimiterActor` per job holds a
:class:`~scriptorium.limits.budget.RateBudget` per profile, and each worker asks it through an
:class:`ActorLimiter`. ``ray`` is imported only by the methods that talk to an actor.

The actor never sleeps: it answers how long to wait, and the worker sleeps. Ray runs an actor's
methods one at a time, which makes every grant atomic. It also holds the job's cooldown table, so
a profile one worker found busy is skipped by every worker's fallback chains.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scriptorium.limits.budget import Estimate, RateBudget
from scriptorium.limits.cooldown import CooldownTable
from scriptorium.limits.limiter import Stopped

if TYPE_CHECKING:
    from scriptorium.profile.model import RateLimits

__all__ = ["ActorLimiter", "LimiterActor", "start_limiter"]


class LimiterActor:
    """The job's budgets, one :class:`RateBudget` per profile, as a Ray actor. Methods answer at
    once (Ray runs them one at a time, so each is atomic)."""

    def __init__(
        self, limits: dict[str, dict[str, int]], window_s: float, margin_s: float | None
    ) -> None:
        from scriptorium.profile.model import RateLimits

        self._window_s = window_s
        self._margin_s = margin_s
        self._budgets = {
            name: RateBudget(RateLimits(**given), window_s=window_s, margin_s=margin_s)
            for name, given in limits.items()
        }
        self._cooldowns = CooldownTable()
        self._closed = False

    def allow(self, profile: str, given: dict[str, int]) -> None:
        """Hold ``profile`` to the limits ``given`` (``RateLimits.given()``) from now on: a
        profile the driver first saw while the job ran (one with a budget keeps it)."""
        from scriptorium.profile.model import RateLimits

        if profile not in self._budgets:
            self._budgets[profile] = RateBudget(
                RateLimits(**given), window_s=self._window_s, margin_s=self._margin_s
            )

    def acquire(self, profile: str, need: Estimate, delay_s: float) -> tuple[float, int]:
        """``(0, ticket)`` granted; ``(wait, -1)`` ask again after ``wait``; ``(-1, -1)`` the
        job is stopping."""
        if self._closed:
            return -1.0, -1
        budget = self._budgets.get(profile)
        if budget is None:
            return 0.0, -1
        return budget.acquire(time.monotonic(), need, delay_s=delay_s)

    def peek(self, profile: str, need: Estimate) -> float:
        """Seconds until ``need`` would be granted (0: now; -1: the job is stopping)."""
        if self._closed:
            return -1.0
        budget = self._budgets.get(profile)
        return 0.0 if budget is None else budget.peek(time.monotonic(), need)

    def settle(self, profile: str, ticket: int, used: Estimate) -> None:
        """Record real usage of a grant."""
        budget = self._budgets.get(profile)
        if budget is not None and ticket >= 0:
            budget.settle(ticket, used)

    def pause(self, profile: str, seconds: float) -> None:
        """Grant nothing for the profile for ``seconds`` (a 429)."""
        budget = self._budgets.get(profile)
        if budget is not None:
            budget.pause(time.monotonic(), seconds)

    def close(self) -> None:
        """Stop granting (the driver is stopping)."""
        self._closed = True

    def remaining(self, profile: str) -> float:
        """Seconds ``profile`` still cools down in this job."""
        return self._cooldowns.remaining(time.monotonic(), profile)

    def cool(self, profile: str, seconds: float) -> None:
        """Leave ``profile`` alone for ``seconds`` in this job."""
        self._cooldowns.cool(time.monotonic(), profile, seconds)


def start_limiter(
    ray: Any, limits: Mapping[str, RateLimits], window_s: float, margin_s: float | None
) -> Any:
    """A new :class:`LimiterActor` on the cluster ``ray`` is connected to, holding ``limits``
    (named ``scriptorium-limiter-<uuid>``, claiming no CPU); its handle."""
    plain = {name: given.given() for name, given in limits.items()}
    return (
        ray.remote(LimiterActor)
        .options(name=f"scriptorium-limiter-{uuid.uuid4().hex}", num_cpus=0)
        .remote(plain, window_s, margin_s)
    )


class ActorLimiter:
    """The :class:`~scriptorium.limits.limiter.Limiter` a worker uses: asks the actor, sleeps
    here. ``limited`` names the profiles with limits: for the others the actor would answer
    "go" to every question but the grant's, whose "stop" is what keeps a row from being sent
    once the job stops, so only the grant is asked for them (one actor call a row, not two)."""

    def __init__(self, actor: Any, limited: frozenset[str]) -> None:
        self._actor = actor
        self._limited = limited

    def ready(self, profile: str, need: Estimate) -> None:
        """Block until the actor says ``need`` would be granted (profiles with limits only)."""
        if profile not in self._limited:
            return
        import ray

        while True:
            wait = ray.get(self._actor.peek.remote(profile, need))
            if wait < 0:
                raise Stopped
            if wait == 0:
                return
            time.sleep(min(wait, 1.0))

    def acquire(self, profile: str, need: Estimate, *, delay_s: float = 0.0) -> int:
        """Block until the actor grants ``need``; the grant's ticket (-1: no limits)."""
        import ray

        while True:
            wait, ticket = ray.get(self._actor.acquire.remote(profile, need, delay_s))
            if wait < 0:
                raise Stopped
            if wait == 0:
                return int(ticket)
            time.sleep(min(wait, 1.0))

    def settle(self, profile: str, ticket: int, used: Estimate) -> None:
        """Tell the actor what a grant really used (without waiting for its answer)."""
        if ticket >= 0:
            self._actor.settle.remote(profile, ticket, used)

    def pause(self, profile: str, seconds: float) -> None:
        """Pause the profile's budget on the actor (profiles with limits only)."""
        if profile in self._limited:  # the actor pauses budgets only; others have none
            self._actor.pause.remote(profile, seconds)

    def remaining(self, profile: str) -> float:
        """Seconds ``profile`` still cools down in this job (asked of the actor: one call)."""
        import ray

        return float(ray.get(self._actor.remaining.remote(profile)))

    def cool(self, profile: str, seconds: float) -> None:
        """Cool ``profile`` down for every worker of the job. Waits for the actor to have it (one
        call, made only when a profile said "busy"), so any row the driver starts afterwards, on
        whichever worker, is answered from a table that already holds it."""
        import ray

        ray.get(self._actor.cool.remote(profile, seconds))
