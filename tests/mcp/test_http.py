"""The bearer token in front of the streamable HTTP transport."""

from __future__ import annotations

import asyncio

import httpx
from starlette.types import Receive, Scope, Send

from scriptorium.mcp.http import BearerGuard

TOKEN = "mcp-test-token-5f6a7b"


async def _inner(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"served"})


def _status(headers: dict[str, str]) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=BearerGuard(_inner, TOKEN))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.post("/mcp", headers=headers, json={})

    return asyncio.run(go())


def test_a_request_without_the_token_is_refused_with_401() -> None:
    answer = _status({})
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"].startswith("Bearer")
    assert answer.json()["error"]["code"] == "unauthorized"


def test_a_wrong_token_is_refused_and_never_echoed() -> None:
    answer = _status({"Authorization": "Bearer not-the-token"})
    assert answer.status_code == 401
    assert "not-the-token" not in answer.text
    assert TOKEN not in answer.text


def test_the_right_token_passes() -> None:
    answer = _status({"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200
    assert answer.text == "served"
