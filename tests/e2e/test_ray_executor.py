"""``--executor ray`` on a real local Ray cluster (one per session, 2 CPUs) against the loopback
Anthropic server, through the real SDK: the same output as the local executor, one rate budget for
every worker, and no row lost (or written twice) when a worker is killed."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from scriptorium import Engine, RunRequest
from scriptorium.batch.ray import RayExecutor
from scriptorium.cli import main
from scriptorium.usecase.model import RunResult
from tests.conftest import RAY_KEY_ENV
from tests.executor_support import (
    EchoServer,
    most_in_any_window,
    stable,
    write_project,
    write_rows,
)

pytest.importorskip("ray")
# A real cluster: seconds to start, seconds per test; run by `make ci`, not `make test`.
pytestmark = [pytest.mark.usefixtures("ray_cluster"), pytest.mark.slow]


def _read(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_ray_output_equals_the_local_executors_line_for_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with EchoServer() as server:
        root = write_project(tmp_path / "project", server.url, RAY_KEY_ENV)
        rows = write_rows(tmp_path / "in.jsonl", 6)
        monkeypatch.chdir(tmp_path)
        outs = {}
        for executor in ("local", "ray"):
            out = tmp_path / f"{executor}.jsonl"
            status = main(
                ["batch", "hello", "--root", str(root), "--in", str(rows), "--out", str(out),
                 "--concurrency", "2", "--executor", executor, "--json"]
            )  # fmt: skip
            assert status == 0
            outs[executor] = _read(out)
    local, ray_lines = outs["local"], outs["ray"]
    assert [r["line"] for r in ray_lines] == [1, 2, 3, 4, 5, 6]
    assert [stable(r) for r in ray_lines] == [stable(r) for r in local]
    assert [r["request_hash"] for r in ray_lines] == [r["request_hash"] for r in local]
    assert ray_lines[3]["result"]["output"]["text"] == "echo: Say hello to row 3."  # type: ignore[index]
    # Both runs went over the wire: twelve calls, none twice.
    assert len(server.arrivals) == 12


def test_ray_resumes_by_request_hash_from_a_local_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows a local run already answered are copied, not sent again."""
    with EchoServer() as server:
        root = write_project(tmp_path / "project", server.url, RAY_KEY_ENV)
        monkeypatch.chdir(tmp_path)
        out = tmp_path / "out.jsonl"
        args = ["batch", "hello", "--root", str(root), "--out", str(out), "--json"]
        assert main([*args, "--in", str(write_rows(tmp_path / "a.jsonl", 3))]) == 0
        before = _read(out)
        assert (
            main([*args, "--in", str(write_rows(tmp_path / "b.jsonl", 5)), "--executor", "ray"])
            == 0
        )
        after = _read(out)
        assert len(server.arrivals) == 5
    assert after[:3] == before


@pytest.mark.parametrize("workers", [2, 4])
def test_workers_share_one_requests_per_minute_budget(tmp_path: Path, workers: int) -> None:
    """90 requests a minute over a 2 s window is 3 a window: with 2 or 4 workers the server never
    sees a fourth inside any 2 s, and the budget is what paces the job."""
    window_s, capacity, rows = 2.0, 3, 7
    with EchoServer() as server:
        root = write_project(tmp_path, server.url, RAY_KEY_ENV, limits={"requests_per_minute": 90})
        executor = RayExecutor(window_s=window_s, margin_s=0.5, workers=workers)
        requests = [RunRequest(prompt_id="hello", inputs={"name": f"n{i}"}) for i in range(rows)]
        results = Engine(root).run_many(requests, concurrency=workers, executor=executor)
        arrivals = server.arrivals
    assert all(isinstance(r, RunResult) for r in results)
    assert len(arrivals) == rows
    assert most_in_any_window(arrivals, window_s) <= capacity
    # Seven rows at three a window need a third window: the limiter, not the workers, set the pace.
    assert arrivals[-1] - arrivals[0] >= 2 * window_s


def _ray_task_pids(name: str) -> list[int]:
    """Worker processes of actor class ``name`` (Ray titles them ``ray::<name>``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.startswith(f"ray::{name}".encode()):
            found.append(int(entry.name))
    return found


def test_a_worker_killed_mid_job_loses_no_row(tmp_path: Path) -> None:
    rows = 8
    with EchoServer(latency_s=0.4) as server:
        root = write_project(tmp_path, server.url, RAY_KEY_ENV)
        requests = [RunRequest(prompt_id="hello", inputs={"name": f"n{i}"}) for i in range(rows)]
        executor = RayExecutor(workers=2, max_retries=3)
        outcome: list[object] = []
        job = threading.Thread(
            target=lambda: outcome.append(
                Engine(root).run_many(requests, concurrency=2, executor=executor)
            )
        )
        job.start()
        killed = None
        deadline = time.monotonic() + 60
        while killed is None and time.monotonic() < deadline and job.is_alive():
            busy = _ray_task_pids("RowRunner")
            if busy and server.arrivals:  # a row is on the wire in that worker
                killed = busy[0]
                os.kill(killed, signal.SIGKILL)
            time.sleep(0.02)
        job.join(timeout=120)
        assert not job.is_alive()
    assert killed is not None, "no worker was running a row"
    [results] = outcome
    assert isinstance(results, list)
    assert all(isinstance(r, RunResult) for r in results)
    texts = [r.output.text for r in results]
    assert texts == [f"echo: Say hello to n{i}." for i in range(rows)]
