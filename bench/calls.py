"""Per-call time at zero latency (sync, and async one call at a time), and async throughput with
many calls in flight, for every contender against the same loopback server, in interleaved
blocks."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from bench.rows import Row, SyncCall, Unavailable
from bench.stats import Summary, paired_ratio, summarize

__all__ = ["Measured", "async_sequential", "async_throughput", "sequential"]


@dataclass
class Measured:
    """One row's block measurements (``values``), or why it has none (``note``)."""

    row: Row
    values: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    note: str = ""

    def summary(self) -> Summary | None:
        return summarize(self.values) if self.values else None

    def ratio(self, floor: Measured) -> Summary | None:
        if not self.values or len(self.values) != len(floor.values):
            return None
        return paired_ratio(self.values, floor.values)


def _why(err: BaseException) -> str:
    if isinstance(err, Unavailable):
        return str(err)
    text = f"{type(err).__name__}: {err}".replace("\n", " ").replace("|", "/")
    return f"failed: {text[:160]}"


def _rotated(rows: Sequence[Row], block: int) -> list[Row]:
    # Each block starts with a different row, so none always runs right after the same neighbour.
    shift = block % len(rows)
    return [*rows[shift:], *rows[:shift]]


def _settle() -> None:
    """Collect, then freeze what setup left (every peer's modules live in this one process): the
    collector then scans only what the calls allocate, not a heap no single-library program has."""
    gc.collect()
    gc.freeze()


def sequential(
    url: str, rows: Sequence[Row], *, calls: int, blocks: int, warmup: int
) -> list[Measured]:
    """Wall and client CPU microseconds per call, one call after another."""
    measured = {row.name: Measured(row) for row in rows}
    callers: dict[str, SyncCall] = {}
    for row in rows:
        try:
            call = row.sync(url)
            for _ in range(warmup):
                call()
            callers[row.name] = call
        except Exception as err:
            measured[row.name].note = _why(err)
    live = [row for row in rows if row.name in callers]
    _settle()
    for block in range(blocks):
        for row in _rotated(live, block):
            call = callers[row.name]
            wall0, cpu0 = time.perf_counter(), time.process_time()
            for _ in range(calls):
                call()
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            measured[row.name].values.append(wall / calls * 1e6)
            measured[row.name].cpu.append(cpu / calls * 1e6)
    for call in callers.values():
        close = getattr(call, "close", None)
        if close is not None:
            close()
    return [measured[row.name] for row in rows]


async def _one_at_a_time(row: Row, url: str, calls: int, warmup: int) -> tuple[float, float]:
    call, close = await row.aio(url)
    for _ in range(warmup):
        await call()
    _settle()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        await call()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    await close()
    return wall / calls * 1e6, cpu / calls * 1e6


def async_sequential(
    url: str, rows: Sequence[Row], *, calls: int, blocks: int, warmup: int
) -> list[Measured]:
    """Wall and client CPU microseconds per awaited call, one after another; each block on a
    fresh event loop (an async SDK client belongs to one loop), warmed before it is timed."""
    measured = {row.name: Measured(row) for row in rows}
    for block in range(blocks):
        for row in _rotated(list(rows), block):
            if measured[row.name].note:
                continue
            try:
                took, cpu = asyncio.run(_one_at_a_time(row, url, calls, warmup))
            except Exception as err:
                measured[row.name].note = _why(err)
                measured[row.name].values.clear()
                measured[row.name].cpu.clear()
                continue
            measured[row.name].values.append(took)
            measured[row.name].cpu.append(cpu)
    return [measured[row.name] for row in rows]


async def _throughput(row: Row, url: str, total: int, concurrency: int) -> tuple[float, float]:
    call, close = await row.aio(url)
    # Warm-up: one call per worker, so the pool's connections are open before the clock starts.
    await asyncio.gather(*(call() for _ in range(concurrency)))
    _settle()
    remaining = total

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await call()

    wall0, cpu0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    await close()
    return total / wall, cpu / total * 1e6


def async_throughput(
    url: str, rows: Sequence[Row], *, total: int, concurrency: int, blocks: int
) -> list[Measured]:
    """Calls per second with ``concurrency`` calls in flight; each block runs on a fresh event loop
    (an async SDK client belongs to one loop) and is warmed before it is timed."""
    measured = {row.name: Measured(row) for row in rows}
    live = list(rows)
    for block in range(blocks):
        for row in _rotated(live, block):
            if measured[row.name].note:
                continue
            try:
                rate, cpu = asyncio.run(_throughput(row, url, total, concurrency))
            except Exception as err:
                measured[row.name].note = _why(err)
                measured[row.name].values.clear()
                measured[row.name].cpu.clear()
                continue
            measured[row.name].values.append(rate)
            measured[row.name].cpu.append(cpu)
    return [measured[row.name] for row in rows]
