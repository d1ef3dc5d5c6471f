"""``scriptorium serve`` under hostile load, on a real uvicorn process over loopback: the health
probe still answers while a hostile image and a hostile model answer are being processed, and
clients that hang up cancel their runs (queued ones never reach the provider; the next run does not
wait for the abandoned ones)."""

from __future__ import annotations

import base64
import json
import socket
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from scriptorium.testing import FakeAnthropicServer
from tests.e2e.test_cli import closed_port
from tests.e2e.test_serve import SERVE, serve_env, wait_until_up

KEY_ENV = "SERVE_LOAD_TEST_KEY"
KEY = "sk-ant-serve-load-canary-5e1f0a"
CONCURRENCY = 2
PROMPTS = {
    "scan": "---\nprofile: claude\nartifacts:\n  scan: {required: true, media_type: image/jpeg, "
    "max_bytes: 8000000}\n---\nDescribe: {{ artifacts.scan.block }}\n",
    "count": "---\nprofile: claude\noutput: {format: json}\n---\nCount the items.\n",
    "hello": "---\nprofile: claude\n---\nSay hello.\n",
    "slow": "---\nprofile: slow\n---\nSay hello, slowly.\n",
}
#: How long the slow provider takes to answer anything.
SLOW_S = 8.0
#: A start-of-image and then ~4.9 MB of restart markers: walked to its end, seconds of CPU.
HOSTILE_JPEG = b"\xff\xd8" + b"\xff\xd0" * 2_450_000
#: About 2 million characters a lenient reading must work through (seconds of CPU).
HOSTILE_ANSWER = ("{a: 1} " * 300_000)[:2_000_000]


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    port: int
    llm: FakeAnthropicServer
    slow: FakeAnthropicServer


def _profile(url: str) -> str:
    return (
        f"provider: anthropic\nmodel: claude-sonnet-4-6\nendpoint: {url}\n"
        f"api_key_env: {KEY_ENV}\nsettings: {{max_retries: 0, timeout_s: 60}}\n"
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with FakeAnthropicServer() as llm, FakeAnthropicServer(latency_s=SLOW_S) as slow:
        root = tmp_path_factory.mktemp("serve-load")
        (root / "prompts").mkdir()
        (root / "profiles").mkdir()
        for name, text in PROMPTS.items():
            (root / "prompts" / f"{name}.prompt.md").write_text(text, encoding="utf-8")
        (root / "profiles" / "claude.yaml").write_text(_profile(llm.url), encoding="utf-8")
        (root / "profiles" / "slow.yaml").write_text(_profile(slow.url), encoding="utf-8")
        port = closed_port()
        process = subprocess.Popen(
            [*SERVE, "--root", str(root), "--port", str(port), "--concurrency", str(CONCURRENCY)],
            env=serve_env(**{KEY_ENV: KEY}),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until_up(url, process)
            llm.reply("warm")  # the first run imports the SDK and opens the connection pool
            warm = httpx.post(f"{url}/v1/runs", json={"prompt_id": "hello"}, timeout=60)
            assert warm.status_code == 200, warm.text
            yield Served(process, url, port, llm, slow)
        finally:
            process.terminate()
            _, err = process.communicate(timeout=30)
            assert KEY not in err


@dataclass
class Probe:
    """``/healthz`` asked again and again: when each answer was asked for and came."""

    url: str
    answers: list[tuple[float, float]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self.stop.is_set():
                asked = time.monotonic()
                assert client.get(f"{self.url}/healthz").status_code == 200
                self.answers.append((asked, time.monotonic()))
                time.sleep(0.02)

    def within(self, start: float, end: float) -> list[float]:
        """The latencies of the answers asked for and given between ``start`` and ``end``."""
        return [done - asked for asked, done in self.answers if asked >= start and done <= end]


@pytest.mark.slow  # 15 s of hostile CPU work, and latencies that a loaded machine stretches
def test_healthz_answers_while_hostile_work_is_in_flight(served: Served) -> None:
    """A hostile 5 MB "JPEG" (refused as unreadable) and a 2-million-character hostile answer
    (read leniently, seconds of CPU) in flight together: the probe is answered throughout, quickly,
    while the answer is still being judged."""
    served.llm.clear()
    served.llm.reply(HOSTILE_ANSWER)
    outcome: dict[str, Any] = {}

    def post(name: str, body: dict[str, Any]) -> None:
        response = httpx.post(f"{served.url}/v1/runs", json=body, timeout=120)
        outcome[name] = (response, time.monotonic())

    image = {"base64": base64.b64encode(HOSTILE_JPEG).decode(), "media_type": "image/jpeg"}
    lenient = threading.Thread(target=post, args=("count", {"prompt_id": "count"}))
    jpeg = threading.Thread(
        target=post, args=("scan", {"prompt_id": "scan", "artifacts": {"scan": image}})
    )
    probe = Probe(served.url)
    prober = threading.Thread(target=probe.run)
    prober.start()
    lenient.start()
    jpeg.start()
    deadline = time.monotonic() + 60
    while not served.llm.requests:  # the provider has the request: its answer is on its way
        assert time.monotonic() < deadline, "the run never reached the provider"
        time.sleep(0.005)
    answered = time.monotonic()
    lenient.join(timeout=120)
    jpeg.join(timeout=120)
    probe.stop.set()
    prober.join(timeout=30)

    response, finished = outcome["count"]
    assert response.status_code == 200, response.text
    refused = outcome["scan"][0]
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["reason"] == "unreadable"
    # The window in which the server was judging the hostile answer (after it arrived, before the
    # result went out): the probe was answered in it, more than once, and quickly.
    during = probe.within(answered + 0.1, finished)
    assert len(during) >= 3, (finished - answered, probe.answers[-5:])
    assert statistics.median(during) < 0.1, during
    assert max(during) < 1.0, during


def _http_request(port: int, body: dict[str, Any], *, events: bool) -> bytes:
    data = json.dumps(body).encode()
    head = (
        f"POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        + ("Accept: text/event-stream\r\n" if events else "")
        + "\r\n"
    )
    return head.encode() + data


@pytest.mark.parametrize("events", [False, True], ids=["plain", "sse"])
def test_clients_that_hang_up_cancel_their_runs(served: Served, events: bool) -> None:
    """Six clients send a run to a slow provider through a server of two slots and hang up at
    0.2 s: the next run gets a slot at once instead of waiting for the abandoned runs' answers,
    and only the two that were in flight ever reached the provider (the queued four never do)."""
    served.slow.clear()
    clients = []
    for _ in range(6):
        client = socket.create_connection(("127.0.0.1", served.port))
        client.sendall(_http_request(served.port, {"prompt_id": "slow"}, events=events))
        clients.append(client)
    time.sleep(0.2)
    for client in clients:
        client.close()
    served.llm.clear()
    served.llm.reply("Hello in time.")
    started = time.monotonic()
    response = httpx.post(f"{served.url}/v1/runs", json={"prompt_id": "hello"}, timeout=60)
    waited = time.monotonic() - started
    assert response.status_code == 200, response.text
    assert waited < SLOW_S / 2, f"the next run waited {waited:.1f} s for a slot"
    assert len(served.slow.requests) <= CONCURRENCY, "a run queued behind the slots was sent"
