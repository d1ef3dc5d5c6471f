"""The row gate and the retry hooks that draw from it: while a worker thread runs a batch row, the
retry loop of that thread's call takes the row's grant just before its first request, its
transport retries take grants of their own, and a 429 pauses every worker of the profile.

The gate is per thread (a row's call runs on the thread that runs the row), so the hooks can be
installed once on the engine's router and do nothing in a thread that is not running a row.

Cooldowns reach the job the same way: :class:`RowCooldowns`, the table an engine gives its
runs, answers from the engine's own table and, while the thread runs a batch row whose limiter
keeps cooldowns, from the job's too (on Ray the limiter actor's, shared by every worker), and
tells both.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from scriptorium.limits.budget import Estimate
from scriptorium.limits.cooldown import Cooldowns
from scriptorium.limits.limiter import Limiter, Stopped

if TYPE_CHECKING:
    from scriptorium.llm.retry import RetryHooks, RetryInfo

__all__ = ["Gate", "RowCooldowns", "guarded", "rate_limit_hooks"]


@dataclass(slots=True)
class Gate:
    """The row a worker thread is running: its limiter, profile and estimate, and the grant of
    its first request once taken."""

    limiter: Limiter
    profile: str
    need: Estimate
    ticket: int = -1
    granted: bool = False
    stopped: bool = False
    #: The job's cooldown table, when its limiter keeps one.
    cooldowns: Cooldowns | None = None

    def take(self) -> None:
        """Take the grant of the row's first request (once)."""
        if not self.granted:
            self.ticket = self.limiter.acquire(self.profile, self.need)
            self.granted = True


_current = threading.local()


@contextmanager
def guarded(limiter: Limiter, profile: str, need: Estimate) -> Iterator[Gate]:
    """While active in a thread, the retry loop of that thread's call takes the row's grant just
    before its first request (after the SDK client is built, so a slow first import cannot put
    the grant far from the send), its transport retries acquire too (each is a request the
    provider counts), and a 429 pauses every worker of the profile."""
    shared = limiter if isinstance(limiter, Cooldowns) else None
    gate = Gate(limiter, profile, need, cooldowns=shared)
    _current.gate = gate
    try:
        yield gate
    finally:
        _current.gate = None


def _before_request() -> bool:
    """The retry loop's ``stop_requested``: takes the row's grant; True when the batch stops."""
    gate: Gate | None = getattr(_current, "gate", None)
    if gate is None:
        return False
    try:
        gate.take()
    except Stopped:
        gate.stopped = True
        return True
    return False


def _on_retry(info: RetryInfo) -> None:
    gate: Gate | None = getattr(_current, "gate", None)
    if gate is None:
        return
    if info.failure.reason == "rate_limited":
        seconds = info.failure.retry_after_s
        gate.limiter.pause(gate.profile, info.delay_s if seconds is None else seconds)
    # The retry is sent after the backoff sleep: it is granted for then.
    gate.limiter.acquire(gate.profile, gate.need, delay_s=info.delay_s)


def rate_limit_hooks(hooks: RetryHooks | None = None) -> RetryHooks:
    """``hooks`` (default ones when None) with the rate-limit hooks added. They do nothing in a
    thread that is not running a guarded batch row."""
    from scriptorium.llm.retry import RetryHooks

    base = hooks or RetryHooks()
    if _on_retry in base.on_retry:
        return base
    stop = base.stop_requested

    def stop_requested() -> bool:
        return _before_request() or (stop is not None and stop())

    return replace(base, on_retry=(*base.on_retry, _on_retry), stop_requested=stop_requested)


class RowCooldowns:
    """The cooldowns of an engine's runs: its own table (``local``), and while the calling thread
    runs a batch row, the job's table as well, so every worker of the job skips a profile any of
    them found busy. A profile cools down as long as either table says."""

    __slots__ = ("_local",)

    def __init__(self, local: Cooldowns) -> None:
        self._local = local

    def remaining(self, profile: str) -> float:
        """Seconds ``profile`` still cools down, by the engine's table or the job's."""
        left = self._local.remaining(profile)
        shared = _job_cooldowns()
        return left if shared is None else max(left, shared.remaining(profile))

    def cool(self, profile: str, seconds: float) -> None:
        """Cool ``profile`` down in the engine's table and the job's."""
        self._local.cool(profile, seconds)
        shared = _job_cooldowns()
        if shared is not None:
            shared.cool(profile, seconds)


def _job_cooldowns() -> Cooldowns | None:
    gate: Gate | None = getattr(_current, "gate", None)
    return None if gate is None else gate.cooldowns
