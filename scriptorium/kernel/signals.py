"""The signals that stop a kernel: recorded the moment they arrive, acted on by the kernel's flow.

A supervisor stops a worker with SIGTERM (a terminal's Ctrl-C sends SIGINT). The handler installed
here only records the first one (:class:`Stop`); it never raises into whatever the process was
doing. Raising there (the usual ``KeyboardInterrupt``) lands the interruption at a random point:
inside an import, where an import-lock callback swallows it and the run then completes and is paid
for; inside the writing of the ending; or before the handler that would have reported it. Instead
the main thread only waits while a worker thread does the work
(:func:`scriptorium.kernel.worker.serve`), and decides the ending itself when a stop is recorded.

Standard library only: ``__main__`` installs the handlers before anything else is imported, so a
signal that arrives while the process is still starting is recorded too.
"""

from __future__ import annotations

import signal
from types import FrameType

__all__ = ["STOP", "Stop", "install"]


class Stop:
    """Whether (and by which signal) the kernel was asked to stop. Written only by the signal
    handler, in the main thread; read from any thread."""

    def __init__(self) -> None:
        self.signum: int | None = None
        #: Set when the kernel ended on a stop while its work was still running.
        self.abandoned = False

    @property
    def requested(self) -> bool:
        """Whether a stop was asked for."""
        return self.signum is not None

    def request(self, signum: int) -> None:
        """Record a stop (the first one counts; later ones change nothing). No lock: a second
        signal may interrupt the handler of the first, and must not wait on it."""
        if self.signum is None:
            self.signum = signum

    def name(self) -> str:
        """The signal's name (``SIGTERM``), for the error message."""
        if self.signum is None:
            return "no signal"
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"


#: The process's one record of stop signals (``python -m scriptorium.kernel``).
STOP = Stop()


def _record(signum: int, frame: FrameType | None) -> None:
    STOP.request(signum)


def install() -> Stop:
    """Make SIGTERM and SIGINT record a stop in :data:`STOP` instead of killing the process or
    raising ``KeyboardInterrupt``; returns :data:`STOP`."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _record)
    return STOP
