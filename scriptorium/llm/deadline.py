"""The run's wall-clock deadline, where the I/O underneath can see it.

``timeout_s`` is a deadline, not a socket timeout: a server that keeps sending something (a body
dripped a byte at a time, ``100 Continue`` forever, an endless chunked body) never trips a
per-read timeout. The retry loop and the stream reading loop therefore say *when* the current
attempt (or the wait for a stream's next content) must end:

- async code runs the attempt inside ``asyncio.timeout`` (whatever carries the bytes; cancelling
  closes the connection), and :func:`expired` turns that into :class:`DeadlineExceeded`;
- sync code cannot cancel a blocking read, so the moment is kept in a context variable
  (:func:`bounded`), and the HTTP clients scriptorium builds read it before every socket read,
  write and connect (``llm/http_clients.py``): each waits at most until the deadline, then fails
  as a timeout of its HTTP library.

:class:`DeadlineExceeded` is what the retry classification reads as ``reason="timeout"``.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["DeadlineExceeded", "bounded", "left", "when"]

#: The ``time.monotonic()`` moment the current sync attempt must end by (None: no deadline).
_AT: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "scriptorium_deadline", default=None
)


class DeadlineExceeded(TimeoutError):
    """The run's deadline passed while an attempt, or a stream's wait for content, was running."""


def when() -> float | None:
    """The ``time.monotonic()`` moment the current sync attempt must end by, or None."""
    return _AT.get()


def left(timeout: float | None) -> float | None:
    """``timeout`` shortened to what is left before the deadline (None: no limit either way)."""
    at = _AT.get()
    if at is None:
        return timeout
    remaining = at - time.monotonic()
    return remaining if timeout is None else min(timeout, remaining)


@contextmanager
def bounded(at: float) -> Iterator[None]:
    """Sync I/O inside the block ends by ``at`` (``time.monotonic()``), an earlier deadline
    already in force kept."""
    outer = _AT.get()
    token = _AT.set(at if outer is None else min(at, outer))
    try:
        yield
    finally:
        _AT.reset(token)
