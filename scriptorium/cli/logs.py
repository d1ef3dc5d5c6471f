"""What the command says on stderr while it works: ``-v`` logs at INFO (each transport retry with
its reason and delay, each repair, each fallback), ``-vv`` at DEBUG; without ``-v`` a command that
waits on retries for more than a few seconds says so once, so a slow run never looks hung.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

__all__ = ["NOTICE_AFTER_S", "RetryNotice", "logging_for"]

#: How long a command may wait on retries before it says so (without ``-v``).
NOTICE_AFTER_S = 3.0

_RETRY_LOGGER = "scriptorium.llm.retry"
_FORMAT = "scriptorium: %(levelname)s %(name)s: %(message)s"


class RetryNotice(logging.Handler):
    """Counts the waits the retry loop announces; once they add up to :data:`NOTICE_AFTER_S`,
    writes one line to ``stream`` (and nothing after)."""

    def __init__(self, stream: IO[str], after_s: float = NOTICE_AFTER_S) -> None:
        super().__init__(logging.INFO)
        self.stream = stream
        self.after_s = after_s
        self.waited_s = 0.0
        self.said = False

    def emit(self, record: logging.LogRecord) -> None:
        delay = getattr(record, "delay_s", None)
        if self.said or not isinstance(delay, int | float):
            return
        self.waited_s += float(delay)
        if self.waited_s < self.after_s:
            return
        self.said = True
        reason = getattr(record, "reason", "a failure")
        attempt, most = getattr(record, "next_attempt", None), getattr(record, "max_attempts", None)
        of = f" (attempt {attempt} of {most})" if attempt and most else ""
        try:
            self.stream.write(
                f"scriptorium: retrying after {reason}{of}, waiting {delay:.1f}s; "
                "-v shows every retry\n"
            )
            self.stream.flush()
        except (OSError, ValueError):  # a closed stderr must not fail the run
            pass


@contextmanager
def logging_for(verbosity: int, stream: IO[str]) -> Iterator[None]:
    """Route scriptorium's log records to ``stream`` for the duration of one command: INFO with
    ``verbosity`` 1, DEBUG from 2; with 0 only the retry notice. Levels and handlers are put back
    afterwards (``main`` may run many times in one process)."""
    root = logging.getLogger("scriptorium")
    retry = logging.getLogger(_RETRY_LOGGER)
    saved = (root.level, retry.level)
    handler: logging.Handler
    if verbosity > 0:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter(_FORMAT))
        level = logging.DEBUG if verbosity > 1 else logging.INFO
        handler.setLevel(level)
        target = root
        target.setLevel(min(level, root.level) if root.level else level)
    else:
        handler = RetryNotice(stream)
        target = retry
        if not retry.isEnabledFor(logging.INFO):
            retry.setLevel(logging.INFO)
    target.addHandler(handler)
    try:
        yield
    finally:
        target.removeHandler(handler)
        root.setLevel(saved[0])
        retry.setLevel(saved[1])
