"""Callers who point a run at a hostile upstream cannot hold the server's slots: with client keys
allowed, runs whose ``overrides.endpoint`` drips its answer a byte at a time end at their
``timeout_s``, and an honest caller is answered meanwhile and after."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path
from typing import Any

import httpx

from scriptorium.httpapi import create_app
from scriptorium.testing import FakeAnthropicServer
from tests.hardening.hostile import HostileServer, anthropic_body, response
from tests.httpapi.project import engine_for

BUDGET_S = 0.6
# Room for a loaded machine; a drip of the whole answer would take some 20 s.
SLACK_S = 1.4


def _drip(sock: socket.socket, index: int, prompt: str, server: HostileServer) -> None:
    for byte in response(anthropic_body("dripped")):
        if not server.sleep(0.05):
            return
        sock.sendall(bytes([byte]))


def test_drip_upstreams_end_at_their_deadline_and_free_their_slots(
    project: Path, server: FakeAnthropicServer
) -> None:
    server.reply("Hello, Ada.")
    server.reply("Hello, Ada.")
    app = create_app(engine_for(project), allow_client_keys=True)
    with HostileServer(_drip) as drip:
        hostile = {
            "prompt_id": "hello",
            "profile": "claude",
            "inputs": {"name": "Ada"},
            "api_key": "client-key-0123456789",
            "overrides": {"endpoint": drip.url, "timeout_s": BUDGET_S, "max_retries": 2},
        }
        honest = {"prompt_id": "hello", "profile": "claude", "inputs": {"name": "Ada"}}

        async def timed(client: httpx.AsyncClient, body: dict[str, Any]) -> tuple[Any, float]:
            start = time.monotonic()
            answer = await client.post("/v1/runs", json=body)
            return answer, time.monotonic() - start

        async def main() -> list[tuple[Any, float]]:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://testserver", timeout=30
            ) as client:
                # An honest run first: the SDK is imported before any clock starts.
                before = await timed(client, honest)
                first = await asyncio.gather(*(timed(client, hostile) for _ in range(4)))
                after = await timed(client, honest)
                return [*first, before, after]

        results = asyncio.run(main())
    for answer, took in results[:4]:
        assert answer.status_code == 504, answer.text
        assert answer.json()["error"]["reason"] == "timeout"
        assert took <= BUDGET_S + SLACK_S, took
    for answer, _ in results[4:]:
        assert answer.status_code == 200, answer.text
        assert answer.json()["output"]["text"] == "Hello, Ada."
