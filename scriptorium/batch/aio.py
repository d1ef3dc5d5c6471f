"""``arun_many`` given an iterator: runs on the event loop, results given back in input order as
they come, through the same bounded window as the threaded pipeline
(:func:`~scriptorium.batch.pipeline.window_size`).

At most ``concurrency`` runs are in flight and at most a window of rows is held (running, or done
and waiting for an earlier one); when the oldest row is slow and the window is full, no more
requests are read until it finishes. A consumer that stops early (breaks out of ``async for``,
closes the iterator, is cancelled) cancels the runs still held: a cancelled run closes its
connection, as any cancelled ``arun`` does.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING

from scriptorium.batch.pipeline import window_size
from scriptorium.errors import ScriptoriumError

if TYPE_CHECKING:
    from scriptorium.usecase.model import RunRequest, RunResult

__all__ = ["arun_ordered"]


async def _requests(
    requests: Iterator[RunRequest] | AsyncIterator[RunRequest],
) -> AsyncIterator[RunRequest]:
    if isinstance(requests, AsyncIterator):
        async for request in requests:
            yield request
    else:
        for request in requests:
            yield request


async def arun_ordered(
    run: Callable[[RunRequest], Awaitable[RunResult]],
    requests: Iterator[RunRequest] | AsyncIterator[RunRequest],
    *,
    concurrency: int,
) -> AsyncGenerator[RunResult | ScriptoriumError, None]:
    """``run(request)`` for every request, at most ``concurrency`` at a time; the results (a
    failed run's error in its place) in input order, each as soon as it and those before it are
    done (see the module doc)."""
    size = window_size(concurrency)
    gate = asyncio.Semaphore(concurrency)

    async def one(request: RunRequest) -> RunResult | ScriptoriumError:
        async with gate:
            try:
                return await run(request)
            except ScriptoriumError as err:
                return err

    held: deque[asyncio.Task[RunResult | ScriptoriumError]] = deque()
    try:
        async for request in _requests(requests):
            if len(held) >= size:
                yield await held.popleft()
            held.append(asyncio.ensure_future(one(request)))
            while held and held[0].done():
                yield held.popleft().result()
        while held:
            yield await held.popleft()
    finally:
        for task in held:
            task.cancel()
        if held:
            await asyncio.gather(*held, return_exceptions=True)
