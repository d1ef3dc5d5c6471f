"""The rate budget of one profile, pure: it is given the time and answers how long to wait, so it is
tested without sleeping and the Ray actor holding it never blocks.

It keeps a sliding-window log of what was granted: every grant is an entry (one request, its
estimated input tokens, its ``max_tokens``) that counts until ``window_s + margin_s`` after it was
granted. A request is granted when, for every budget, what the live entries hold plus the request
fits the window's capacity (the per-minute budget scaled to the window). The margin is there
because the provider sees a request a little after it was granted, and not always equally late:
without it, jitter could put one request too many in one of the provider's windows.

Workers :meth:`~RateBudget.settle` a grant with the real usage once the call returns (the estimate
of input tokens is rough; output is estimated at ``max_tokens``, usually far more than is used). A
429 with ``retry-after`` :meth:`pauses <RateBudget.pause>` the budget, so every worker waits, not
just the one that was told.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scriptorium.profile.model import RateLimits

__all__ = ["DEFAULT_WINDOW_S", "Estimate", "RateBudget", "default_margin_s"]

#: Providers state their budgets per minute and measure them over about a minute.
DEFAULT_WINDOW_S = 60.0


def default_margin_s(window_s: float) -> float:
    """How long past its window a grant still counts: 2% of the window, at least a quarter second
    (covers the time from grant to arrival at the provider, on a busy machine)."""
    return max(0.25, window_s * 0.02)


@dataclass(frozen=True, slots=True)
class Estimate:
    """What one call is expected to use: one request, about ``input_tokens`` in, at most
    ``output_tokens`` out."""

    input_tokens: int
    output_tokens: int
    requests: int = 1


@dataclass(slots=True)
class _Entry:
    at: float
    amounts: list[float]  # requests, input tokens, output tokens


class RateBudget:
    """The budgets of one profile over a sliding window (pure: every method is given ``now``).

    ``window_s`` is how long the provider's window is (60 s; tests shorten it), ``margin_s`` how
    long past it a grant still counts (default :func:`default_margin_s`). A request larger than a
    token budget on its own is granted once the window is empty, so it waits but never deadlocks.
    """

    def __init__(
        self,
        limits: RateLimits,
        *,
        window_s: float = DEFAULT_WINDOW_S,
        margin_s: float | None = None,
    ) -> None:
        if window_s <= 0:
            raise ValueError("window_s must be positive")
        self.window_s = float(window_s)
        self.margin_s = default_margin_s(window_s) if margin_s is None else float(margin_s)
        if self.margin_s < 0:
            raise ValueError("margin_s must not be negative")
        scale = self.window_s / 60.0
        rpm = limits.requests_per_minute
        requests = None if rpm is None else math.floor(rpm * scale + 1e-9)
        if requests is not None and requests < 1:
            raise ValueError(
                f"a window of {window_s:g} s holds no whole request at {rpm} requests per minute"
            )
        #: The capacity of one window per budget (requests, input tokens, output tokens).
        self.capacity: tuple[float | None, ...] = (
            None if requests is None else float(requests),
            _scaled(limits.input_tokens_per_minute, scale),
            _scaled(limits.output_tokens_per_minute, scale),
        )
        self._entries: dict[int, _Entry] = {}
        self._next_ticket = 0
        self._paused_until = -math.inf

    @property
    def span_s(self) -> float:
        """How long a grant counts."""
        return self.window_s + self.margin_s

    def acquire(self, now: float, need: Estimate, *, delay_s: float = 0.0) -> tuple[float, int]:
        """Ask for one call sent ``delay_s`` from ``now``. Returns ``(0.0, ticket)`` when granted
        (and recorded), else ``(seconds to wait before asking again, -1)``."""
        wait = self.peek(now, need)
        if wait > 0:
            return wait, -1
        ticket = self._next_ticket
        self._next_ticket += 1
        amounts = [float(need.requests), float(need.input_tokens), float(need.output_tokens)]
        self._entries[ticket] = _Entry(now + delay_s, amounts)
        return 0.0, ticket

    def peek(self, now: float, need: Estimate) -> float:
        """How long until ``need`` would be granted (0: now); records nothing."""
        self._expire(now)
        if now < self._paused_until:
            return self._paused_until - now
        amounts = (float(need.requests), float(need.input_tokens), float(need.output_tokens))
        wait = 0.0
        for kind, cap in enumerate(self.capacity):
            if cap is None:
                continue
            used = sum(entry.amounts[kind] for entry in self._entries.values())
            if used == 0 or used + amounts[kind] <= cap:
                continue
            wait = max(wait, self._until_room(now, kind, used + amounts[kind] - cap))
        return wait

    def settle(self, ticket: int, used: Estimate) -> None:
        """Replace a grant's estimate with what the call really used (a grant already expired
        needs nothing). More requests than granted (repairs) count from the grant's time."""
        entry = self._entries.get(ticket)
        if entry is not None:
            entry.amounts = [
                float(max(used.requests, 1)),
                float(used.input_tokens),
                float(used.output_tokens),
            ]

    def pause(self, now: float, seconds: float) -> None:
        """Grant nothing for ``seconds`` from ``now`` (a 429's ``retry-after``)."""
        self._paused_until = max(self._paused_until, now + max(0.0, seconds))

    def in_window(self, now: float) -> Estimate:
        """What the live grants hold (for progress displays and tests)."""
        self._expire(now)
        sums = [sum(e.amounts[k] for e in self._entries.values()) for k in range(3)]
        return Estimate(
            requests=int(sums[0]), input_tokens=int(sums[1]), output_tokens=int(sums[2])
        )

    def _expire(self, now: float) -> None:
        span = self.span_s
        gone = [t for t, entry in self._entries.items() if entry.at + span <= now]
        for ticket in gone:
            del self._entries[ticket]

    def _until_room(self, now: float, kind: int, excess: float) -> float:
        """Seconds until enough grants expire to free ``excess`` of budget ``kind`` (until the
        window is empty when the request alone is larger than the budget)."""
        freed = 0.0
        last = now
        for entry in sorted(self._entries.values(), key=lambda e: e.at):
            freed += entry.amounts[kind]
            last = entry.at + self.span_s
            if freed >= excess:
                break
        return max(last - now, 1e-3)


def _scaled(per_minute: int | None, scale: float) -> float | None:
    return None if per_minute is None else per_minute * scale
