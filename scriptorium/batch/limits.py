"""Rate budgets shared by every worker of a batch: the profile's ``limits``, enforced the same way by
the local executor (a :class:`LocalLimiter` in the process) and the Ray executor (one actor per job
wrapping the same :class:`RateBudget`).

:class:`RateBudget` is pure: it is given the time and answers how long to wait, so it is tested
without sleeping and the actor never blocks. It keeps a sliding-window log of what was granted:
every grant is an entry (one request, its estimated input tokens, its ``max_tokens``) that counts
until ``window_s + margin_s`` after it was granted. A request is granted when, for every budget,
what the live entries hold plus the request fits the window's capacity (the per-minute budget
scaled to the window). The margin is there because the provider sees a request a little after it
was granted, and not always equally late: without it, jitter could put one request too many in one
of the provider's windows.

Workers :meth:`settle` a grant with the real usage once the call returns (the estimate of input
tokens is rough; output is estimated at ``max_tokens``, usually far more than is used). A 429 with
``retry-after`` :meth:`pauses <RateBudget.pause>` the budget, so every worker waits, not just the one
that was told.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from scriptorium.llm.tokens import CHARS_PER_TOKEN

if TYPE_CHECKING:
    from scriptorium.llm.retry import RetryHooks, RetryInfo
    from scriptorium.profile.model import RateLimits
    from scriptorium.usecase.model import PreparedRun, RunResult

__all__ = [
    "DEFAULT_WINDOW_S",
    "Estimate",
    "Gate",
    "Limiter",
    "LocalLimiter",
    "RateBudget",
    "Stopped",
    "estimate",
    "guarded",
    "rate_limit_hooks",
    "real_usage",
]

#: Providers state their budgets per minute and measure them over about a minute.
DEFAULT_WINDOW_S = 60.0
# Per message framing, as the local token estimate counts it.
_PER_MESSAGE = 4


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


def estimate(prepared: PreparedRun) -> Estimate:
    """The estimate for a prepared run: its rendered text at four characters a token, and its
    effective ``max_tokens``."""
    chars = len(prepared.system or "")
    for message in prepared.messages:
        content = message.content
        if isinstance(content, str):
            chars += len(content)
        else:
            chars += sum(len(getattr(part, "text", "") or "") for part in content)
    schema = prepared.output.schema_
    if schema is not None:
        chars += len(json.dumps(schema, separators=(",", ":")))
    tokens = math.ceil(chars / CHARS_PER_TOKEN) + _PER_MESSAGE * len(prepared.messages)
    return Estimate(input_tokens=tokens, output_tokens=prepared.settings.max_tokens)


def real_usage(result: RunResult) -> Estimate:
    """What a finished run used, counted as providers count it against their input budget
    (uncached input plus cache writes; cache reads are not counted by Anthropic's). Requests
    are its generations (the first and any repairs); transport retries took grants of their
    own."""
    usage = result.usage
    return Estimate(
        input_tokens=usage.input_tokens + usage.cache_creation_input_tokens,
        output_tokens=usage.output_tokens,
        requests=max(1, len(result.attempts)),
    )


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


class LocalLimiter:
    """:class:`RateBudget` per profile behind a lock, for workers that are threads of one process.
    Profiles without limits are never waited on."""

    def __init__(
        self,
        limits: Mapping[str, RateLimits],
        *,
        window_s: float = DEFAULT_WINDOW_S,
        margin_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._budgets = {
            name: RateBudget(given, window_s=window_s, margin_s=margin_s)
            for name, given in limits.items()
        }
        self._lock = threading.Lock()
        self._clock = clock
        self._sleep = sleep
        self._stopped = threading.Event()

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


# -- the row gate: what a worker thread is running, for the retry loop's hooks --------------------


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
    gate = Gate(limiter, profile, need)
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
    from dataclasses import replace

    from scriptorium.llm.retry import RetryHooks

    base = hooks or RetryHooks()
    if _on_retry in base.on_retry:
        return base
    stop = base.stop_requested

    def stop_requested() -> bool:
        return _before_request() or (stop is not None and stop())

    return replace(base, on_retry=(*base.on_retry, _on_retry), stop_requested=stop_requested)
