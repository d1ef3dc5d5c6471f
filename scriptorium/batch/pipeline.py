"""A batch as a bounded pipeline: rows are read, prepared, run and given back in input order,
holding at most a window of rows at any moment, however long the input.

The driver numbers the input items and, for each, asks the :class:`ReorderWindow` for room
(:meth:`ReorderWindow.admit`) before preparing it. A row is admitted only while it is fewer than
``size`` places past the oldest row not yet given back, so rows in flight plus outcomes waiting
for an earlier row never exceed ``size``. A slow row holds the window: rows after it keep running
and their outcomes wait, until the window is full; then the reader waits (nothing more is read or
prepared) until the slow row finishes, and everything it held back is given back at once.

Outcomes leave the window in input order, either pushed to a callback as soon as each prefix is
complete (:class:`ReorderWindow` given ``emit``: the ``scriptorium batch`` writer) or pulled by a
consumer (:meth:`ReorderWindow.take`: ``run_many`` given an iterator), whose pace then bounds the
reader's. :func:`feed` is the loop both drivers share: each item is prepared once, by ``start``,
and the executor runs the row it returns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Generic, TypeVar

from scriptorium.batch.work import BatchExecutor, Row, RowWork

if TYPE_CHECKING:
    from scriptorium.errors import ScriptoriumError
    from scriptorium.usecase.model import RunResult

__all__ = ["ReorderWindow", "Window", "feed", "window_size"]

T = TypeVar("T")
Item = TypeVar("Item")

#: How many rows the window holds per row in flight: room for the rows after a slow one to keep
#: running for a while before the reader has to wait.
WINDOW_PER_SLOT = 4
#: The smallest window (a concurrency of 1 still reads ahead a little).
MIN_WINDOW = 16
#: How long a wait lasts before looking again (so Ctrl-C and a stop are noticed).
_WAIT_S = 0.5


def window_size(concurrency: int) -> int:
    """The reorder window of a batch running ``concurrency`` rows at a time."""
    return max(MIN_WINDOW, WINDOW_PER_SLOT * concurrency)


class Window(Exception):
    """Raised by :meth:`ReorderWindow.take` once every outcome was taken (the input ended)."""


class ReorderWindow(Generic[T]):
    """Outcomes back in input order through a window of ``size`` rows (see the module doc).
    Thread-safe: the reader admits, executor threads put, one consumer takes (or ``emit`` is
    called, under the window's lock, in input order)."""

    def __init__(self, size: int, emit: Callable[[T], None] | None = None) -> None:
        if size < 1:
            raise ValueError("a reorder window holds at least one row")
        self.size = size
        self._emit = emit
        self._held: dict[int, T] = {}
        self._released = 0  # outcomes given back (emitted or taken)
        self._count: int | None = None  # how many items the input held, once it ended
        self._failure: BaseException | None = None
        self._stopped = False
        self._changed = threading.Condition(threading.Lock())

    @property
    def released(self) -> int:
        """How many outcomes have left the window, in input order."""
        return self._released

    @property
    def held(self) -> int:
        """Outcomes waiting in the window for an earlier row (tests read it)."""
        return len(self._held)

    def admit(self, index: int) -> bool:
        """Wait until row ``index`` fits the window; False when the window was stopped (read no
        more)."""
        with self._changed:
            while not self._stopped and index >= self._released + self.size:
                self._changed.wait(_WAIT_S)
            return not self._stopped

    def put(self, index: int, outcome: T) -> None:
        """Row ``index``'s outcome; given back (emitted) as soon as every earlier one was."""
        with self._changed:
            self._held[index] = outcome
            if self._emit is not None:
                while self._released in self._held:
                    self._emit(self._held.pop(self._released))
                    self._released += 1
            self._changed.notify_all()

    def take(self) -> T:
        """The next outcome in input order, waiting for it; :class:`Window` once the input ended
        and everything was taken; the reader's failure, if it failed."""
        with self._changed:
            while True:
                if self._released in self._held:
                    outcome = self._held.pop(self._released)
                    self._released += 1
                    self._changed.notify_all()
                    return outcome
                if self._failure is not None:
                    raise self._failure
                if self._count is not None and self._released >= self._count:
                    raise Window
                self._changed.wait(_WAIT_S)

    def ended(self, count: int) -> None:
        """The input ended after ``count`` items."""
        with self._changed:
            self._count = count
            self._changed.notify_all()

    def failed(self, error: BaseException) -> None:
        """The reader failed: :meth:`take` raises ``error`` once the outcomes before it are out."""
        with self._changed:
            self._failure = error
            self._changed.notify_all()

    def stop(self) -> None:
        """Admit nothing more (the consumer went away, or the batch is stopping)."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()


def feed(
    work: RowWork,
    items: Iterable[Item],
    *,
    start: Callable[[int, Item], Row | T],
    finish: Callable[[Row, RunResult | ScriptoriumError], T],
    window: ReorderWindow[T],
    executor: BatchExecutor,
    concurrency: int,
) -> int:
    """Run ``items`` through ``executor`` within ``window``; the number of items read.

    Each admitted item is given to ``start`` once, with its index: it returns the :class:`Row`
    to run (prepared, its plan on it) or the item's outcome when it needs no call (a bad line, a
    failed preparation, a result from an earlier run), which goes straight into the window. A
    row's outcome goes through ``finish`` (the record it becomes) into the window."""
    count = 0

    def rows() -> Iterator[Row]:
        nonlocal count
        for index, item in enumerate(items):
            if not window.admit(index):
                return
            count = index + 1
            started = start(index, item)
            if isinstance(started, Row):
                yield started
            else:
                window.put(index, started)

    def deliver(row: Row, outcome: RunResult | ScriptoriumError) -> None:
        window.put(row.index, finish(row, outcome))

    executor.execute(work, rows(), deliver, concurrency=concurrency)
    return count
