"""The retry policy: how many attempts, within which budget, with which delays; and the hooks
(clock, sleep, jitter, supervision, observers) the loop is driven by."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from scriptorium.llm.model import RetryInfo

__all__ = ["SLEEP_SLICE_S", "RetryHooks", "RetryPolicy"]

#: Sleeps are cut into slices this long so a supervisor can stop us and see a heartbeat.
SLEEP_SLICE_S = 0.5


@dataclass(frozen=True)
class RetryPolicy:
    """Limits of the loop: at most ``max_retries`` retries within ``timeout_s`` of wall clock."""

    max_retries: int = 2
    timeout_s: float = 60.0
    base_delay_s: float = 1.5
    max_delay_s: float = 30.0
    max_retry_after_s: float = 60.0

    def backoff_s(self, retry_index: int, jitter: Callable[[float, float], float]) -> float:
        """The jittered delay before retry number ``retry_index`` (0 for the first retry)."""
        exponent = min(retry_index, 32)  # 2**32 * base is far past any cap; avoids huge floats
        return min(self.max_delay_s, self.base_delay_s * 2.0**exponent) * jitter(0.75, 1.25)


@dataclass(frozen=True)
class RetryHooks:
    """Everything time-related or supervisory, injectable for tests and for supervisors."""

    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    asleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    jitter: Callable[[float, float], float] = random.uniform
    #: Checked before each request and every 0.5 s of sleep; true -> ``reason="cancelled"``.
    stop_requested: Callable[[], bool] | None = None
    #: Called at each sleep slice, so a supervisor sees a long backoff as progress.
    heartbeat: Callable[[], None] | None = None
    #: Observers told about each retry; their exceptions are swallowed.
    on_retry: tuple[Callable[[RetryInfo], None], ...] = ()
