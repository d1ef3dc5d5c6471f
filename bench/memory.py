"""Memory per in-flight run: the peak RSS a round of ``concurrency`` calls in flight adds, divided
by ``concurrency``, each measurement in a fresh interpreter.

In the child: the row is built and warmed with one call (imports, caches, one connection), the
collector is run, the resident size is read and the kernel's peak-RSS mark is reset
(``/proc/self/clear_refs``); then ``concurrency`` calls run at once against the server (its
latency keeps them all in flight together) and the new peak is read. What the round adds is the
runs' own objects, their connections and their buffers.

    python -m bench.memory ROW_NAME URL CONCURRENCY     # the child; prints one JSON line
"""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
from dataclasses import dataclass, field

from bench.rows import ROWS, Row
from bench.stats import Summary, summarize

__all__ = ["MemoryUse", "measure_memory"]


@dataclass
class MemoryUse:
    """One row's KiB per in-flight run over the repeats, or why it has none."""

    row: Row
    kib_per_run: list[float] = field(default_factory=list)
    note: str = ""

    def summary(self) -> Summary | None:
        return summarize(self.kib_per_run) if self.kib_per_run else None


def _status(field_name: str) -> int:
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field_name} in /proc/self/status")


async def _child(row: Row, url: str, concurrency: int) -> dict[str, float]:
    call, close = await row.aio(url)
    await call()
    gc.collect()
    baseline = _status("VmRSS")
    with open("/proc/self/clear_refs", "w", encoding="utf-8") as refs:
        refs.write("5")  # resets VmHWM to the current resident size
    await asyncio.gather(*(call() for _ in range(concurrency)))
    peak = _status("VmHWM")
    await close()
    return {"baseline_kib": baseline, "peak_kib": peak}


def _measure_once(row: Row, url: str, concurrency: int) -> float:
    done = subprocess.run(
        [sys.executable, "-m", "bench.memory", row.name, url, str(concurrency)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise RuntimeError(last[:160])
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return max(0.0, float(found["peak_kib"]) - float(found["baseline_kib"])) / concurrency


def measure_memory(url: str, rows: list[Row], *, concurrency: int, repeats: int) -> list[MemoryUse]:
    """KiB per in-flight run for each row, ``repeats`` fresh processes each, interleaved."""
    used = [MemoryUse(row) for row in rows]
    for _ in range(repeats):
        for item in used:
            if item.note:
                continue
            try:
                item.kib_per_run.append(_measure_once(item.row, url, concurrency))
            except (RuntimeError, OSError, subprocess.TimeoutExpired, ValueError) as err:
                item.note = f"failed: {err}"
                item.kib_per_run.clear()
    return used


def main(argv: list[str]) -> None:
    """The child: one row, one round, one JSON line on stdout."""
    name, url, concurrency = argv[0], argv[1], int(argv[2])
    row = next(r for r in ROWS if r.name == name)
    print(json.dumps(asyncio.run(_child(row, url, concurrency))))


if __name__ == "__main__":
    main(sys.argv[1:])
