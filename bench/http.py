"""``python -m bench.http``: a run over HTTP (``scriptorium serve``) against the same run through
the library, both against the loopback Anthropic server.

- **Overhead per request**: one request at a time, zero server latency. The library row awaits
  ``engine.arun`` in this process; the HTTP row sends the same run as ``POST /v1/runs`` to
  ``scriptorium serve`` (a subprocess over the same project) and reads the ``RunResult`` back.
  Blocks alternate between the two; the overhead is the difference of the medians per request:
  the loopback hop, uvicorn, the app's routing, auth, body parse, result serialisation and access
  log line, and the client's read.
- **Throughput at 200 in flight**: 50 ms server latency, 200 workers each looping until the total
  is done; runs per second for each, and the ratio HTTP / library. The server runs with its
  default concurrency bound unless ``--server-concurrency`` says otherwise.

Each block also records the serving side's CPU (this process for the library, the server process
for HTTP), steadier than wall time on a shared machine.

The HTTP client is a minimal keep-alive HTTP/1.1 client on asyncio streams (one connection per
worker), so what is measured is the server, not an HTTP client library's own cost. Every answer
is parsed and must hold a valid extraction, or the benchmark fails.

    python -m bench.http            # the full run, about a minute
    python -m bench.http --smoke    # a few requests (CI)
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.server import serve
from bench.stats import paired_ratio, summarize
from bench.task import API_KEY, DOCUMENT, KEY_ENV, make_project

__all__ = ["main", "measure"]

_SERVE = (sys.executable, "-m", "scriptorium", "serve")
_BODY = json.dumps({"prompt_id": "extract", "inputs": {"document": DOCUMENT}}).encode("utf-8")


@dataclass(frozen=True)
class Sizes:
    sequential: int
    blocks: int
    warmup: int
    total: int
    concurrency: int
    latency_s: float


FULL = Sizes(sequential=150, blocks=6, warmup=20, total=600, concurrency=200, latency_s=0.05)
SMOKE = Sizes(sequential=3, blocks=2, warmup=2, total=20, concurrency=10, latency_s=0.05)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@contextmanager
def serving(project: Path, concurrency: int | None) -> Iterator[tuple[int, int]]:
    """``scriptorium serve`` over ``project`` in a subprocess; yields its port and process id
    once it answers."""
    port = _free_port()
    env = {**os.environ, KEY_ENV: API_KEY}
    env.pop("SCRIPTORIUM_HTTP_TOKEN", None)
    proc = subprocess.Popen(
        [*_SERVE, "--root", str(project), "--port", str(port)]
        + ([] if concurrency is None else ["--concurrency", str(concurrency)]),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError("scriptorium serve exited before answering")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("scriptorium serve did not answer within 60 s") from None
                time.sleep(0.1)
        yield port, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Connection:
    """One keep-alive HTTP/1.1 connection posting the run and checking the answer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int):
        self.reader = reader
        self.writer = writer
        self.request = (
            f"POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(_BODY)}\r\n\r\n"
        ).encode("ascii") + _BODY

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
        return cls(reader, writer, port)

    async def run(self) -> None:
        self.writer.write(self.request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = head[9:12]
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        body = await self.reader.readexactly(length)
        if status != b"200" or not json.loads(body)["validation"]["valid"]:
            raise AssertionError(f"the run over HTTP failed: {status!r} {body[:300]!r}")

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


def _library(url: str) -> tuple[Any, Callable[[], Awaitable[None]]]:
    from scriptorium import Engine

    engine = Engine(make_project(url), env={KEY_ENV: API_KEY})

    async def call() -> None:
        # A fresh inputs dict per run, as a request brings (no identity cache can help).
        result = await engine.arun("extract", inputs={"document": DOCUMENT})
        if not result.validation.valid:
            raise AssertionError(f"the library run failed: {result.validation.issues}")

    return engine, call


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Block:
    """One timed block: wall seconds, the serving side's CPU seconds, runs."""

    wall_s: float
    cpu_s: float
    runs: int

    @property
    def ms_per_run(self) -> float:
        return self.wall_s / self.runs * 1e3

    @property
    def cpu_ms_per_run(self) -> float:
        return self.cpu_s / self.runs * 1e3

    @property
    def per_s(self) -> float:
        return self.runs / self.wall_s


async def _timed(work: Awaitable[None], runs: int, cpu: Callable[[], float]) -> Block:
    cpu0, wall0 = cpu(), time.perf_counter()
    await work
    return Block(time.perf_counter() - wall0, cpu() - cpu0, runs)


async def _sequential(call: Callable[[], Awaitable[None]], n: int) -> None:
    for _ in range(n):
        await call()


async def _flood(calls: Sequence[Callable[[], Awaitable[None]]], total: int) -> None:
    """One worker per callable, each looping until ``total`` runs are done."""
    left = total

    async def worker(call: Callable[[], Awaitable[None]]) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await call()

    await asyncio.gather(*(worker(c) for c in calls))


async def _connections(port: int, n: int) -> list[Connection]:
    # Opened per block: the server closes connections idle for more than a few seconds.
    connections = [await Connection.open(port) for _ in range(n)]
    await asyncio.gather(*(c.run() for c in connections))
    return connections


async def _pairs(
    url: str, port: int, pid: int, sizes: Sizes, concurrent: bool
) -> tuple[list[Block], list[Block]]:
    """Interleaved blocks of the library and of HTTP, one or ``concurrency`` in flight. The CPU is
    the serving side's: this process's for the library, the server process's for HTTP."""
    engine, library = _library(url)
    width = sizes.concurrency if concurrent else 1
    runs = sizes.total if concurrent else sizes.sequential
    lib_blocks: list[Block] = []
    http_blocks: list[Block] = []
    try:
        await asyncio.gather(*(library() for _ in range(max(width, sizes.warmup))))
        for block in range(sizes.blocks):
            for side in ("lib", "http") if block % 2 == 0 else ("http", "lib"):
                if side == "lib":
                    work = (
                        _flood([library] * width, runs)
                        if concurrent
                        else _sequential(library, runs)
                    )
                    lib_blocks.append(await _timed(work, runs, time.process_time))
                    continue
                connections = await _connections(port, width)
                try:
                    calls = [c.run for c in connections]
                    work = _flood(calls, runs) if concurrent else _sequential(calls[0], runs)
                    http_blocks.append(await _timed(work, runs, lambda: _cpu_s(pid)))
                finally:
                    for c in connections:
                        await c.close()
    finally:
        await engine.client.client_for("anthropic").aclose()
    return lib_blocks, http_blocks


def measure(
    sizes: Sizes, server_concurrency: int | None = None
) -> dict[str, tuple[list[Block], list[Block]]]:
    """Blocks for one request at a time (no latency) and for many in flight (50 ms latency).
    ``server_concurrency``: ``serve --concurrency`` (None: its default)."""
    out: dict[str, tuple[list[Block], list[Block]]] = {}
    gc.collect()
    gc.freeze()  # as a long-running server's start-up objects, not rescanned by every collection
    for key, latency, concurrent in (("one", 0.0, False), ("many", sizes.latency_s, True)):
        with (
            serve(latency) as url,
            serving(make_project(url), server_concurrency) as (port, pid),
        ):
            out[key] = asyncio.run(_pairs(url, port, pid, sizes, concurrent))
    return out


def _row(name: str, blocks: list[Block]) -> str:
    wall = summarize([b.ms_per_run for b in blocks]).show("{:.2f}")
    cpu = summarize([b.cpu_ms_per_run for b in blocks]).show("{:.2f}")
    rate = summarize([b.per_s for b in blocks]).show("{:.0f}")
    return f"| {name} | {wall} | {cpu} | {rate} |"


def _report(title: str, lib: list[Block], http: list[Block]) -> None:
    print(f"## {title}")
    print()
    print("| row | wall ms per run | serving CPU ms per run | runs/s |")
    print("|---|---|---|---|")
    print(_row("library: await engine.arun", lib))
    print(_row("HTTP: POST /v1/runs to scriptorium serve", http))
    print()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.http", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="a few requests (CI)")
    parser.add_argument(
        "--server-concurrency",
        type=int,
        default=None,
        metavar="N",
        help="serve --concurrency (default: serve's own default, 64)",
    )
    args = parser.parse_args(argv)
    sizes = SMOKE if args.smoke else FULL
    got = measure(sizes, args.server_concurrency)
    bound = args.server_concurrency or "64 (default)"
    lib, http = got["one"]
    _report("HTTP API: one request at a time, no server latency", lib, http)
    wall = paired_ratio([b.ms_per_run for b in http], [b.ms_per_run for b in lib])
    extra_wall = summarize([h.ms_per_run - b.ms_per_run for h, b in zip(http, lib, strict=True)])
    extra_cpu = summarize(
        [h.cpu_ms_per_run - b.cpu_ms_per_run for h, b in zip(http, lib, strict=True)]
    )
    print(
        f"Overhead per request: wall {extra_wall.show('{:.3f}')} ms, serving CPU "
        f"{extra_cpu.show('{:.3f}')} ms (target < 1 ms); HTTP / library wall "
        f"{wall.show('{:.2f}')}x"
    )
    print()
    lib, http = got["many"]
    title = (
        f"HTTP API: {sizes.concurrency} in flight, {sizes.latency_s * 1000:.0f} ms latency, "
        f"serve --concurrency {bound}"
    )
    _report(title, lib, http)
    rate = paired_ratio([b.per_s for b in http], [b.per_s for b in lib])
    capacity = paired_ratio([b.cpu_ms_per_run for b in lib], [b.cpu_ms_per_run for b in http])
    print(
        f"Throughput HTTP / library: {rate.show('{:.2f}')}x measured; "
        f"{capacity.show('{:.2f}')}x by serving CPU per run (target >= 0.9x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
