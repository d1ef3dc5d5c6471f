"""The budgets of a batch whose workers are threads of this process: a
:class:`~scriptorium.limits.budget.RateBudget` per profile behind one lock, and the job's
cooldown table."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from scriptorium.limits.budget import DEFAULT_WINDOW_S, Estimate, RateBudget
from scriptorium.limits.cooldown import CooldownTable
from scriptorium.limits.limiter import Stopped

if TYPE_CHECKING:
    from scriptorium.profile.model import RateLimits

__all__ = ["LocalLimiter"]


class LocalLimiter:
    """:class:`RateBudget` per profile behind a lock, for workers that are threads of one process.
    Profiles without limits are never waited on. Also the job's cooldowns
    (:class:`~scriptorium.limits.cooldown.Cooldowns`), for every profile."""

    def __init__(
        self,
        limits: Mapping[str, RateLimits],
        *,
        window_s: float = DEFAULT_WINDOW_S,
        margin_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._window_s = window_s
        self._margin_s = margin_s
        self._budgets = {
            name: RateBudget(given, window_s=window_s, margin_s=margin_s)
            for name, given in limits.items()
        }
        self._cooldowns = CooldownTable()
        self._lock = threading.Lock()
        self._clock = clock
        self._sleep = sleep
        self._stopped = threading.Event()

    def allow(self, profile: str, limits: RateLimits) -> None:
        """Hold ``profile`` to ``limits`` from now on (a profile first seen while the job runs;
        one that has a budget already keeps it)."""
        with self._lock:
            if profile not in self._budgets:
                self._budgets[profile] = RateBudget(
                    limits, window_s=self._window_s, margin_s=self._margin_s
                )

    def close(self) -> None:
        """Stop granting: every waiting and later :meth:`acquire` raises :class:`Stopped`."""
        self._stopped.set()

    def ready(self, profile: str, need: Estimate) -> None:
        """Block until ``need`` would be granted (nothing taken)."""
        budget = self._budgets.get(profile)
        while budget is not None:
            if self._stopped.is_set():
                raise Stopped
            with self._lock:
                wait = budget.peek(self._clock(), need)
            if wait <= 0:
                return
            self._sleep(min(wait, 0.5))

    def acquire(self, profile: str, need: Estimate, *, delay_s: float = 0.0) -> int:
        """Block until granted; -1 for a profile without limits."""
        budget = self._budgets.get(profile)
        if budget is None:
            return -1
        while True:
            if self._stopped.is_set():
                raise Stopped
            with self._lock:
                wait, ticket = budget.acquire(self._clock(), need, delay_s=delay_s)
            if wait <= 0:
                return ticket
            # In slices, so a stop is noticed while waiting out a long window.
            self._sleep(min(wait, 0.5))

    def settle(self, profile: str, ticket: int, used: Estimate) -> None:
        """Record real usage of a grant."""
        budget = self._budgets.get(profile)
        if budget is not None and ticket >= 0:
            with self._lock:
                budget.settle(ticket, used)

    def pause(self, profile: str, seconds: float) -> None:
        """Pause the profile's budget for ``seconds``."""
        budget = self._budgets.get(profile)
        if budget is not None:
            with self._lock:
                budget.pause(self._clock(), seconds)

    def remaining(self, profile: str) -> float:
        """Seconds ``profile`` still cools down in this job."""
        with self._lock:
            return self._cooldowns.remaining(self._clock(), profile)

    def cool(self, profile: str, seconds: float) -> None:
        """Leave ``profile`` alone for ``seconds`` in this job."""
        with self._lock:
            self._cooldowns.cool(self._clock(), profile, seconds)
