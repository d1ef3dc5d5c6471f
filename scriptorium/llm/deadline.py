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
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["DeadlineExceeded", "bounded", "left", "run_bounded", "when"]

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


_T = TypeVar("_T")
# Workers for blocking calls of libraries that cannot see the deadline (boto3's urllib3): a call
# past its deadline is abandoned to its own socket timeout while the caller moves on.
_POOL = ThreadPoolExecutor(max_workers=32, thread_name_prefix="scriptorium-deadline")


def run_bounded(call: Callable[[], _T], timeout_s: float) -> _T:
    """``call()`` for a library whose blocking I/O cannot read the deadline (it does not go
    through scriptorium's HTTP clients): run in a worker thread and waited for until the
    deadline in force, else ``timeout_s``; :class:`DeadlineExceeded` when it passes (the call is
    left to end by its library's own socket timeout, its result dropped). The context (the
    deadline, the run's report) travels into the worker."""
    at = _AT.get()
    wait = timeout_s if at is None else max(0.0, min(timeout_s, at - time.monotonic()))
    context = contextvars.copy_context()
    future = _POOL.submit(context.run, call)
    try:
        return future.result(timeout=wait)
    except FutureTimeout as err:
        future.cancel()
        raise DeadlineExceeded(f"no answer within {wait:.1f} s (the run's time left)") from err
