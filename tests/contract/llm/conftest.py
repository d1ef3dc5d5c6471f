"""The harness fixture: one per adapter (see ``harnesses.py``), over servers shared by the module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scriptorium.testing import FakeAnthropicServer, FakeGeminiServer, FakeOpenAIServer
from tests.contract.llm.harnesses import (
    ADAPTERS,
    AnthropicHarness,
    FakeClientHarness,
    FakeProviderHarness,
    GeminiHarness,
    Harness,
    OpenAIHarness,
    ReplayHarness,
)


@pytest.fixture(scope="module")
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    # No default answer: a request the test did not script fails loudly.
    with FakeAnthropicServer(default_text=None) as server:
        yield server


@pytest.fixture(scope="module")
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default_text=None) as server:
        yield server


@pytest.fixture(scope="module")
def gemini_server() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer(default_text=None) as server:
        yield server


@pytest.fixture(params=ADAPTERS)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    """The adapter under test, its script empty, its server's records cleared."""
    name = request.param
    built: Harness
    if name in ("anthropic", "replay"):
        server: FakeAnthropicServer = request.getfixturevalue("anthropic_server")
        server.reset()
        server.count_tokens = None
        inner = AnthropicHarness(server)
        built = inner if name == "anthropic" else ReplayHarness(inner, tmp_path / "tape.jsonl")
    elif name == "openai":
        openai_server: FakeOpenAIServer = request.getfixturevalue("openai_server")
        openai_server.reset()
        built = OpenAIHarness(openai_server)
    elif name == "gemini":
        gemini_server: FakeGeminiServer = request.getfixturevalue("gemini_server")
        gemini_server.reset()
        gemini_server.count_tokens = None
        built = GeminiHarness(gemini_server)
    elif name == "fake":
        built = FakeProviderHarness()
    else:
        built = FakeClientHarness()
    try:
        yield built
    finally:
        built.close()
