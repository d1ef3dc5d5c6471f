"""``scriptorium mcp`` as clients start it, driven by the official SDK's own client: over stdio (a
subprocess on the bundled project and its offline profiles) and over streamable HTTP (a server
process on a free loopback port, a bearer token, runs through the real Anthropic SDK against a
loopback fake whose key must never reach the client)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, MCPError, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client

from scriptorium.testing import FakeAnthropicServer
from tests.e2e.test_cli import closed_port
from tests.httpapi.project import CANARY, KEY_ENV, write_project

REPO = Path(__file__).resolve().parents[2]
MCP = (sys.executable, "-m", "scriptorium", "mcp")
TOKEN = "mcp-e2e-token-8d9e0f1a"
TOKEN_ENV = "SCRIPTORIUM_MCP_E2E_TOKEN"
INVALID_PARAMS = -32602

pytestmark = pytest.mark.slow


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(REPO), **extra)
    return env


def _text(block: Any) -> str:
    assert isinstance(block, types.TextContent)
    return block.text


def test_a_stdio_session_on_the_bundled_project() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "scriptorium", "mcp", "--root", str(REPO), "--tools-per-prompt"],
        env=child_env(),
    )

    async def session() -> None:
        async with Client(params) as client:
            listed = await client.list_prompts()
            names = {p.name for p in listed.prompts}
            assert {"summarize", "classify/sentiment", "extract/contact"} <= names

            got = await client.get_prompt(
                "summarize", {"audience": "board", "artifact.document": "Revenue rose."}
            )
            [message] = got.messages
            assert message.role == "user"
            assert _text(message.content).startswith("<system>\nYou write clear")
            assert "Revenue rose." in _text(message.content)

            with pytest.raises(MCPError) as caught:
                await client.get_prompt("summarise", {})
            assert caught.value.code == INVALID_PARAMS
            assert "did you mean 'summarize'" in caught.value.message

            ran = await client.call_tool(
                "run_prompt", {"prompt": "classify/sentiment", "inputs": {"text": "Lovely!"}}
            )
            assert not ran.is_error
            assert ran.structured_content == {"label": "positive", "confidence": 0.92}
            assert ran.meta is not None
            assert "cost_micro" in ran.meta["usage"]

            contact = await client.call_tool(
                "run_extract_contact", {"artifact.document": "Ada, ada@example.com"}
            )
            assert not contact.is_error
            assert contact.structured_content is not None
            assert contact.structured_content["name"] == "Ada Lovelace"

    anyio.run(session)


def test_stdout_carries_only_the_protocol_even_when_logging_everything() -> None:
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "prompts/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "run_prompt", "arguments": {"prompt": "summarize"}},
        },
    ]
    process = subprocess.Popen(
        [*MCP, "-vv", "--root", str(REPO)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        process.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
        process.stdin.flush()
        # Every line on stdout is a protocol message; the answers come as they are ready.
        answers = [json.loads(process.stdout.readline()) for _ in range(3)]
        # Closing stdin (communicate does) ends the session: the server exits on its own.
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert out == ""
    assert sorted(a["id"] for a in answers) == [1, 2, 3]
    by_id = {a["id"]: a for a in answers}
    assert by_id[1]["result"]["capabilities"]["prompts"] is not None
    assert by_id[3]["result"]["isError"] is True
    assert err  # the logs went there


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    llm: FakeAnthropicServer


def _wait_until_listening(port: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"mcp exited early: {process.communicate()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("mcp did not listen within 60 s")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with FakeAnthropicServer() as llm:
        project = write_project(tmp_path_factory.mktemp("mcp"), llm.url)
        port = closed_port()
        process = subprocess.Popen(
            [
                *MCP,
                "--root",
                str(project),
                "--transport",
                "http",
                "--port",
                str(port),
                "--token-env",
                TOKEN_ENV,
                "-p",
                "claude",
                "--concurrency",
                "1",
            ],
            env=child_env(**{KEY_ENV: CANARY, TOKEN_ENV: TOKEN}),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait_until_listening(port, process)
            yield Served(process, f"http://127.0.0.1:{port}/mcp", llm)
        finally:
            process.terminate()
            try:
                _, err = process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                _, err = process.communicate(timeout=30)
            assert CANARY not in err
            # SIGTERM is a requested stop.
            assert process.returncode == 0, err


def test_http_refuses_a_request_without_the_token(served: Served) -> None:
    refused = httpx.post(served.url, json={}, timeout=30)
    assert refused.status_code == 401
    wrong = httpx.post(served.url, json={}, headers={"Authorization": "Bearer nope"}, timeout=30)
    assert wrong.status_code == 401


def test_an_http_session_renders_and_runs_without_the_key_reaching_the_client(
    served: Served,
) -> None:
    served.llm.reply("Hello, Ada!")

    async def session() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(served.url, http_client=http)) as client,
        ):
            listed = await client.list_prompts()
            assert "greet" in {p.name for p in listed.prompts}

            got = await client.get_prompt("greet", {"name": "Ada"})
            assert _text(got.messages[0].content).endswith("Hello Ada!")

            with pytest.raises(MCPError) as caught:
                await client.get_prompt("greet", {"name": ""})
            assert caught.value.code == INVALID_PARAMS
            assert caught.value.data["code"] == "invalid_request"

            ran = await client.call_tool(
                "run_prompt", {"prompt": "greet", "inputs": {"name": "Ada"}}
            )
            assert not ran.is_error, ran
            assert _text(ran.content[0]) == "Hello, Ada!"
            assert ran.meta is not None
            assert ran.meta["usage"]["llm_calls"] == 1
            assert ran.meta["model"]
            assert CANARY not in ran.model_dump_json(by_alias=True)
            assert KEY_ENV not in ran.model_dump_json(by_alias=True)

    anyio.run(session)


def test_a_cancelled_http_call_frees_its_slot_at_once(served: Served) -> None:
    """With one slot, a call whose client gave up would hold it for the provider's whole answer
    (30 s here) unless the server cancelled its run; the next call gets the slot at once."""
    served.llm.reply("warm")
    served.llm.delay(30, text="too late")
    served.llm.reply("next")

    async def session() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(served.url, http_client=http)) as client,
        ):
            greet = {"prompt": "greet", "inputs": {"name": "Ada"}}
            # The first run loads the provider's SDK in the server: not what is measured here.
            assert _text((await client.call_tool("run_prompt", greet)).content[0]) == "warm"
            with anyio.move_on_after(2) as gave_up:
                await client.call_tool("run_prompt", greet)
            assert gave_up.cancelled_caught
            nxt = await client.call_tool("run_prompt", greet, read_timeout_seconds=15)
            assert _text(nxt.content[0]) == "next"

    anyio.run(session)
