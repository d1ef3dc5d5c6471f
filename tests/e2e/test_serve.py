"""``scriptorium serve`` as users start it: a subprocess on a free loopback port, called over real
HTTP, stopped with SIGTERM while a run is in flight (the run still gets its answer)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from scriptorium.testing import FakeAnthropicServer
from tests.e2e.test_cli import closed_port, scriptorium
from tests.httpapi.project import CANARY, KEY_ENV, write_project

REPO = Path(__file__).resolve().parents[2]
TOKEN = "serve-test-token-1c2d3e"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SERVE = (sys.executable, "-m", "scriptorium", "serve")


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    llm: FakeAnthropicServer


def serve_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(REPO), **extra)
    return env


def wait_until_up(url: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"serve exited early: {process.communicate()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("serve did not come up within 60 s")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with FakeAnthropicServer() as llm:
        project = write_project(tmp_path_factory.mktemp("serve"), llm.url)
        port = closed_port()
        process = subprocess.Popen(
            [*SERVE, "--root", str(project), "--port", str(port), "--concurrency", "4"],
            env=serve_env(**{KEY_ENV: CANARY, "SCRIPTORIUM_HTTP_TOKEN": TOKEN}),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until_up(url, process)
            yield Served(process, url, llm)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate(timeout=30)


def test_a_run_over_real_http(served: Served) -> None:
    """The token from SCRIPTORIUM_HTTP_TOKEN guards the routes; a run goes through the real SDK."""
    served.llm.reply("Hello, Ada!")
    body = {"prompt_id": "hello", "inputs": {"name": "Ada"}}
    refused = httpx.post(f"{served.url}/v1/runs", json=body, timeout=30)
    assert refused.status_code == 401
    response = httpx.post(f"{served.url}/v1/runs", json=body, headers=AUTH, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["output"]["text"] == "Hello, Ada!"
    assert CANARY not in response.text


def test_sigterm_lets_the_run_in_flight_finish(served: Served) -> None:
    """SIGTERM while the provider is still answering: the run completes with 200, then the
    process exits 0, and its log has one access line per request and no key."""
    served.llm.delay(1.5, text="Finished in time")
    body = {"prompt_id": "hello", "inputs": {"name": "Ada"}}
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(
            httpx.post, f"{served.url}/v1/runs", json=body, headers=AUTH, timeout=60
        )
        deadline = time.monotonic() + 30
        while served.llm.pending and time.monotonic() < deadline:
            time.sleep(0.02)
        assert served.llm.pending == 0, "the run never reached the provider"
        served.process.send_signal(signal.SIGTERM)
        response = pending.result(timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["output"]["text"] == "Finished in time"
    out, err = served.process.communicate(timeout=30)
    assert served.process.returncode == 0, err
    assert "POST /v1/runs 200" in err
    assert CANARY not in out + err
    assert TOKEN not in out + err


def test_a_public_address_without_a_token_is_refused_at_start(tmp_path: Path) -> None:
    """Exit 2 and one line saying why, before anything listens."""
    done = scriptorium(
        "serve",
        "--root",
        str(tmp_path),
        "--host",
        "0.0.0.0",
        "--port",
        str(closed_port()),
        cwd=tmp_path,
        env=serve_env(),
    )
    assert done.returncode == 2
    assert done.stderr.startswith("scriptorium: usage: refusing to listen on 0.0.0.0")
    assert "SCRIPTORIUM_HTTP_TOKEN" in done.stderr


@pytest.mark.parametrize("where", ["taken", "unresolvable", "foreign"])
def test_serve_that_cannot_listen_exits_1_naming_the_address(tmp_path: Path, where: str) -> None:
    """A port in use, a host that does not resolve, an address that is not this machine's: exit
    1 (not 3, which means a profile or key problem) with one line of ours naming the address."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        host = {
            "taken": "127.0.0.1",
            "unresolvable": "no-such-host.invalid",
            "foreign": "192.0.2.7",
        }[where]
        env = serve_env(SCRIPTORIUM_HTTP_TOKEN=TOKEN)
        done = scriptorium(
            "serve",
            "--root",
            str(tmp_path),
            "--host",
            host,
            "--port",
            str(port),
            cwd=tmp_path,
            env=env,
        )
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("scriptorium: cannot_listen: ")
    assert f"{host}:{port}" in line
    assert "Errno" not in line
