"""Cooldowns: a target that just said "busy" (``rate_limited``, ``overloaded``) is left alone for
a while by the runs that could try another profile of their fallback chain.

A cooldown belongs to the target actually called, :func:`target_key`: the provider, the endpoint
(and cloud platform and region), the model (providers limit rates per model: a busy large model
says nothing of the small one a chain falls back to on the same account) and which key (a digest
of it, never the key). Not to a profile name: a caller who points a profile at its own endpoint
with its own key (``overrides.endpoint`` over HTTP) and gets a 429 cools only that endpoint and
key, never the server's profile for everyone; two profiles calling the same model at the same
endpoint with the same key share one cooldown.

- :class:`Cooldowns`, the port a run asks (how long a profile still cools down) and tells (a
  profile failed busy, for how long to leave it);
- :class:`CooldownTable`, the table itself, pure: every method is given the time, so it is tested
  without sleeping and the Ray limiter actor can hold one;
- :class:`LocalCooldowns`, a table behind a lock with a clock: what an engine holds for its runs
  (every thread of the process shares it).

How a batch row reaches the table its whole job shares (the limiter's, on Ray the actor's) is in
:mod:`scriptorium.limits.hooks`.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

__all__ = [
    "BUSY_REASONS",
    "DEFAULT_COOLDOWN_S",
    "MAX_COOLDOWN_S",
    "CooldownTable",
    "Cooldowns",
    "LocalCooldowns",
    "cooldown_for",
    "target_key",
]

#: The failure reasons that put a profile in cooldown: the provider said it is busy.
BUSY_REASONS = frozenset({"rate_limited", "overloaded"})
#: How long a profile cools down when the provider gave no ``retry-after``.
DEFAULT_COOLDOWN_S = 30.0
#: The longest cooldown kept, whatever ``retry-after`` said (a day-long quota reset is the
#: provider's to enforce, not a reason to skip a profile for a day in a long-lived process).
MAX_COOLDOWN_S = 3600.0


def cooldown_for(retry_after_s: float | None) -> float:
    """How long to leave a profile that failed busy: its ``retry-after`` when it gave one (at
    most :data:`MAX_COOLDOWN_S`), else :data:`DEFAULT_COOLDOWN_S`."""
    if retry_after_s is None or retry_after_s <= 0:
        return DEFAULT_COOLDOWN_S
    return min(float(retry_after_s), MAX_COOLDOWN_S)


def target_key(
    provider: str,
    endpoint: str | None,
    secrets: Iterable[str | None] = (),
    *,
    model: str = "",
    platform: str | None = None,
    region: str | None = None,
) -> str:
    """The cooldown key of the target a call goes to: ``provider``, ``endpoint`` (None: the
    provider's default), the cloud ``platform`` and ``region`` when there is one, the ``model``,
    and a digest of the credentials sent (``secrets``: the key, a route's signing secrets), never
    their value."""
    where = endpoint or "default"
    if platform is not None:
        where += f" via {platform}" + (f" {region}" if region else "")
    given = [s for s in secrets if s]
    if given:
        digest = hashlib.sha256("\0".join(given).encode("utf-8", "surrogatepass")).hexdigest()
        credential = f"key {digest[:16]}"
    else:
        credential = "no key"
    return f"{provider} {where} {model!r} {credential}"


@runtime_checkable
class Cooldowns(Protocol):
    """What a run asks before trying a profile, and tells when a profile failed busy. Each is
    named by its target's :func:`target_key` (the parameter keeps its old name)."""

    def remaining(self, profile: str) -> float:
        """Seconds the target ``profile`` still cools down (0: it may be tried)."""
        ...

    def cool(self, profile: str, seconds: float) -> None:
        """Leave the target ``profile`` alone for ``seconds`` from now (a longer cooldown already
        running is kept)."""
        ...


class CooldownTable:
    """When each profile may be tried again (pure: every method is given ``now``)."""

    __slots__ = ("_until",)

    def __init__(self) -> None:
        self._until: dict[str, float] = {}

    def remaining(self, now: float, profile: str) -> float:
        """Seconds ``profile`` still cools down at ``now`` (0: none)."""
        until = self._until.get(profile)
        if until is None:
            return 0.0
        if until <= now:
            del self._until[profile]
            return 0.0
        return until - now

    def cool(self, now: float, profile: str, seconds: float) -> None:
        """``profile`` cools down until ``now + seconds`` (or later, if it already did)."""
        if seconds <= 0:
            return
        until = now + seconds
        if until > self._until.get(profile, -1.0):
            self._until[profile] = until


class LocalCooldowns:
    """A :class:`CooldownTable` for the threads of one process (thread-safe); ``clock`` is
    monotonic seconds (injectable for tests)."""

    __slots__ = ("_clock", "_lock", "_table")

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._table = CooldownTable()
        self._lock = threading.Lock()
        self._clock = clock

    def remaining(self, profile: str) -> float:
        """Seconds ``profile`` still cools down."""
        with self._lock:
            return self._table.remaining(self._clock(), profile)

    def cool(self, profile: str, seconds: float) -> None:
        """Leave ``profile`` alone for ``seconds``."""
        with self._lock:
            self._table.cool(self._clock(), profile, seconds)
