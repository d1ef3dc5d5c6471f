"""The local executor (the default) honours the profile's ``limits`` exactly as the Ray executor
does: through the real SDK against the loopback server, with short windows so the tests are quick."""

from __future__ import annotations

from pathlib import Path

import pytest

from scriptorium import Engine, RunRequest
from scriptorium.batch.executor import executor_named
from scriptorium.batch.local import LocalExecutor
from scriptorium.errors import InvalidRequestError
from scriptorium.usecase.model import RunResult
from tests.executor_support import EchoServer, most_in_any_window, write_project

KEY_ENV = "SCRIPTORIUM_LOCAL_EXECUTOR_KEY"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "local-test-key-not-a-secret")


def _requests(count: int) -> list[RunRequest]:
    return [RunRequest(prompt_id="hello", inputs={"name": f"n{i}"}) for i in range(count)]


def test_threads_share_one_requests_per_minute_budget(tmp_path: Path) -> None:
    """180 a minute over a 1 s window is 3 a window, whatever the number of threads."""
    with EchoServer() as server:
        root = write_project(tmp_path, server.url, KEY_ENV, limits={"requests_per_minute": 180})
        executor = LocalExecutor(window_s=1.0, margin_s=0.2)
        results = Engine(root).run_many(_requests(7), concurrency=4, executor=executor)
        arrivals = server.arrivals
    assert [r.output.text for r in results if isinstance(r, RunResult)] == [
        f"echo: Say hello to n{i}." for i in range(7)
    ]
    assert most_in_any_window(arrivals, 1.0) <= 3
    assert arrivals[-1] - arrivals[0] >= 2.0


def test_a_429_pauses_every_worker(tmp_path: Path) -> None:
    """One worker is told to wait a second: no worker sends anything during that second (with
    no executor named: ``run_many``'s default honours the limits too)."""
    with EchoServer() as server:
        root = write_project(tmp_path, server.url, KEY_ENV, limits={"requests_per_minute": 100_000})
        server.fail(429, headers={"retry-after": "1"})
        results = Engine(root).run_many(_requests(40), concurrency=3)
        log = server.log
    assert all(isinstance(r, RunResult) for r in results)
    [t429] = [t for t, status in log if status == 429]
    quiet = [t for t, _ in log if t429 + 0.3 < t < t429 + 0.95]
    assert quiet == []
    assert len(log) == 41


def test_the_executor_names() -> None:
    assert isinstance(executor_named("local"), LocalExecutor)
    with pytest.raises(InvalidRequestError, match="--ray-address needs --executor ray"):
        executor_named("local", address="auto")
    with pytest.raises(InvalidRequestError, match="unknown executor"):
        executor_named("dask")
