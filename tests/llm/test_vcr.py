"""Users' HTTP tooling sees scriptorium's calls: vcrpy records a run against a loopback fake and
replays it with the server gone, with no switch to flip (sync on httpx, async on the SDK's aiohttp
backend or httpx, whichever the default factory picked)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import vcr

from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium._testing.openai_server import FakeOpenAIServer
from scriptorium.llm.anthropic.client import AnthropicClient
from scriptorium.llm.model import LLMRequest, Target
from scriptorium.llm.openai.client import OpenAIClient
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message

KEY = "vcr-test-key-000000"
SERVERS: dict[str, Any] = {"anthropic": FakeAnthropicServer, "openai": FakeOpenAIServer}
CLIENTS: dict[str, Any] = {"anthropic": AnthropicClient, "openai": OpenAIClient}
MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4o-mini"}


def _request(provider: str, url: str) -> LLMRequest:
    return LLMRequest(
        target=Target(provider=provider, model=MODELS[provider], endpoint=url),
        api_key=KEY,
        messages=(Message(role="user", content="Hello"),),
        settings=ExecutionSettings(max_retries=0, timeout_s=5),
    )


def _run(provider: str, mode: str, request: LLMRequest) -> str:
    client = CLIENTS[provider]()
    if mode == "sync":
        with client:
            return str(client.generate(request).text)

    async def main() -> str:
        async with client:
            return str((await client.agenerate(request)).text)

    return asyncio.run(main())


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("provider", sorted(SERVERS))
def test_vcrpy_records_and_replays_a_run(provider: str, mode: str, tmp_path: Path) -> None:
    cassette = str(tmp_path / "run.yaml")
    recorder = vcr.VCR(filter_headers=["authorization", "x-api-key"])
    with SERVERS[provider](default_text="recorded answer") as server:
        request = _request(provider, server.url)
        with recorder.use_cassette(cassette, record_mode="once") as recorded:
            assert _run(provider, mode, request) == "recorded answer"
        assert len(recorded) == 1
        assert len(server.requests) == 1
    text = Path(cassette).read_text()
    assert "recorded answer" in text
    assert KEY not in text
    # The server is gone: only the cassette can answer, and nothing may reach the network.
    with recorder.use_cassette(cassette, record_mode="none") as replayed:
        assert _run(provider, mode, request) == "recorded answer"
    assert replayed.play_count == 1
