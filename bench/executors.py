"""Batch executors side by side: the local thread pool and a local Ray cluster, over the same rows
against the loopback Anthropic server (in a subprocess, 50 ms latency), through the real SDK.

Two things are measured for each executor:

- **throughput**: rows a second with no ``limits``;
- **closeness to a budget**: with ``requests_per_minute`` set (and the window shortened so a few
  windows pass in seconds), the busiest window the *server* saw against the window's capacity
  (must never pass 100 %) and the sustained rate over the job against the budget (target: within
  5 %). Arrival times are taken by the server process (``time.monotonic`` is system-wide).

    python -m bench.executors                    # 2,000 rows, about 3 minutes on 2 CPUs
    python -m bench.executors --rows 60 --smoke  # what CI runs: tables, no timing asserted
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from scriptorium._testing.http import Answer, RecordedRequest
from scriptorium.testing import FakeAnthropicServer

KEY_ENV = "SCRIPTORIUM_BENCH_EXECUTOR_KEY"
PROMPT = "---\nprofile: claude\n---\nSay hello to {{ name }}.\n"


class _LoggingServer(FakeAnthropicServer):
    """Answers every request; notes when each arrived."""

    def __init__(self, latency_s: float) -> None:
        super().__init__(latency_s=latency_s, record=False)
        self.lock = threading.Lock()
        self.arrivals: list[float] = []

    def _answer(self, request: RecordedRequest) -> tuple[Answer, float]:
        with self.lock:
            self.arrivals.append(time.monotonic())
        return super()._answer(request)


def _serve(latency_s: float) -> None:
    """The server process: print the URL; on each line read from stdin, print and forget the
    arrivals so far (as JSON); stop when stdin closes."""
    with _LoggingServer(latency_s) as server:
        print(server.url, flush=True)
        for _ in sys.stdin:
            with server.lock:
                taken, server.arrivals = server.arrivals, []
            print(json.dumps(taken), flush=True)


def _project(root: Path, url: str, limits: dict[str, Any] | None) -> Path:
    (root / "prompts").mkdir(parents=True, exist_ok=True)
    (root / "profiles").mkdir(parents=True, exist_ok=True)
    (root / "prompts" / "hello.prompt.md").write_text(PROMPT, encoding="utf-8")
    profile: dict[str, Any] = {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "endpoint": url,
        "api_key_env": KEY_ENV,
        "settings": {"max_tokens": 64},
    }
    if limits:
        profile["limits"] = limits
    (root / "profiles" / "claude.yaml").write_text(json.dumps(profile), encoding="utf-8")
    return root


def _busiest(arrivals: list[float], window_s: float) -> int:
    times = sorted(arrivals)
    best = start = 0
    for end, t in enumerate(times):
        while times[start] <= t - window_s:
            start += 1
        best = max(best, end - start + 1)
    return best


def _run(executor_name: str, args: argparse.Namespace, root: Path, window_s: float) -> float:
    from scriptorium import Engine, RunRequest
    from scriptorium.batch.local import LocalExecutor
    from scriptorium.batch.ray import RayExecutor
    from scriptorium.usecase.model import RunResult

    executor: Any
    if executor_name == "local":
        executor = LocalExecutor(window_s=window_s)
    else:
        executor = RayExecutor(window_s=window_s)
    engine = Engine(root)
    requests = [
        RunRequest(prompt_id="hello", inputs={"name": f"row {i}"}) for i in range(args.rows)
    ]
    started = time.perf_counter()
    results = engine.run_many(requests, concurrency=args.concurrency, executor=executor)
    elapsed = time.perf_counter() - started
    failed = sum(not isinstance(r, RunResult) for r in results)
    if failed:
        raise RuntimeError(f"{executor_name}: {failed} rows failed: {results[0]!r}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    """Run the comparison and print the two tables."""
    parser = argparse.ArgumentParser(prog="python -m bench.executors")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rpm", type=int, default=3000, help="the budget of the limited run")
    parser.add_argument("--window-s", type=float, default=6.0, help="the limiter's window")
    parser.add_argument("--smoke", action="store_true", help="few rows; numbers not meaningful")
    args = parser.parse_args(argv)
    if args.serve:
        _serve(args.latency)
        return 0
    if args.smoke:
        args.rows = min(args.rows, 60)
        args.rpm, args.window_s = 1200, 1.0
    os.environ.setdefault(KEY_ENV, "bench-key-not-a-secret")  # before Ray starts: workers inherit
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    capacity = int(args.rpm * args.window_s / 60)
    throughput: list[str] = []
    closeness: list[str] = []
    try:
        with _ServerLog(args.latency) as proc_io:
            url = proc_io.url
            with tempfile.TemporaryDirectory() as tmp:
                free = _project(Path(tmp) / "free", url, None)
                limited = _project(Path(tmp) / "limited", url, {"requests_per_minute": args.rpm})
                # Warm both (SDK import, Ray workers) so the tables time steady state.
                for name in ("local", "ray"):
                    _run(
                        name,
                        argparse.Namespace(**{**vars(args), "rows": 2 * args.concurrency}),
                        free,
                        60.0,
                    )
                proc_io.take()
                for name in ("local", "ray"):
                    elapsed = _run(name, args, free, 60.0)
                    proc_io.take()
                    throughput.append(
                        f"| {name} | {args.rows} | {elapsed:.1f} | {args.rows / elapsed:.0f} |"
                    )
                for name in ("local", "ray"):
                    elapsed = _run(name, args, limited, args.window_s)
                    arrivals = proc_io.take()
                    busiest = _busiest(arrivals, args.window_s)
                    sustained = _sustained_rpm(arrivals, capacity)
                    closeness.append(
                        f"| {name} | {args.rpm} | {args.window_s:g} s: {capacity} | {busiest} "
                        f"({busiest / capacity:.0%}) | {sustained:.0f} ({sustained / args.rpm:.1%}) "
                        f"| {elapsed:.1f} |"
                    )
    finally:
        ray.shutdown()
    print(
        f"Rows: {args.rows}, server latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}"
    )
    print()
    print("| executor | rows | seconds | rows/s |")
    print("|---|---|---|---|")
    print("\n".join(throughput))
    print()
    print(
        "| executor | budget (rpm) | window: capacity | busiest window at the server "
        "| sustained rate, rpm (of budget) | seconds |"
    )
    print("|---|---|---|---|---|---|")
    print("\n".join(closeness))
    return 0


def _sustained_rpm(arrivals: list[float], capacity: int) -> float:
    """Requests a minute once the budget binds: a window's capacity over the mean time from the
    first request of one window's worth to the first of the next."""
    times = sorted(arrivals)
    windows = (len(times) - 1) // capacity
    if windows < 1:
        return 0.0
    spacing = (times[windows * capacity] - times[0]) / windows
    return capacity / spacing * 60


class _ServerLog:
    """The server process: its URL, and the arrivals it saw since the last :meth:`take`."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.url = ""

    def __enter__(self) -> _ServerLog:
        argv = [
            sys.executable,
            "-m",
            "bench.executors",
            "--serve",
            "--latency",
            str(self.latency_s),
        ]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        assert self.proc.stdin is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            raise RuntimeError("the benchmark server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def take(self) -> list[float]:
        """The arrivals since the last call."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return [float(t) for t in json.loads(self.proc.stdout.readline())]


if __name__ == "__main__":
    sys.exit(main())
