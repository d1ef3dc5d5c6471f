"""The harness fixture: one per adapter (see ``harnesses.py``), over servers shared by the module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scriptorium.testing import (
    FakeAnthropicServer,
    FakeAzureOpenAIServer,
    FakeBedrockServer,
    FakeGeminiServer,
    FakeOpenAIServer,
    FakeVertexServer,
)
from tests.contract.llm.harnesses import (
    ADAPTERS,
    AWS_ENV,
    AnthropicHarness,
    AzureHarness,
    AzureResponsesHarness,
    BedrockConverseHarness,
    BedrockHarness,
    FakeClientHarness,
    FakeProviderHarness,
    GeminiHarness,
    GeminiVertexHarness,
    Harness,
    OpenAIHarness,
    ReplayHarness,
    ResponsesHarness,
    VertexHarness,
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


@pytest.fixture(scope="module")
def bedrock_server() -> Iterator[FakeBedrockServer]:
    with FakeBedrockServer(default_text=None) as server:
        yield server


@pytest.fixture(scope="module")
def vertex_server() -> Iterator[FakeVertexServer]:
    with FakeVertexServer(default_text=None) as server:
        yield server


@pytest.fixture(scope="module")
def azure_server() -> Iterator[FakeAzureOpenAIServer]:
    deployments = {AzureHarness.model: "gpt-4o-mini"}
    with FakeAzureOpenAIServer(default_text=None, deployments=deployments) as server:
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
    elif name in ("openai", "openai_responses"):
        openai_server: FakeOpenAIServer = request.getfixturevalue("openai_server")
        openai_server.reset()
        built = (OpenAIHarness if name == "openai" else ResponsesHarness)(openai_server)
    elif name in ("gemini", "gemini_vertex"):
        gemini_server: FakeGeminiServer = request.getfixturevalue("gemini_server")
        gemini_server.reset()
        gemini_server.count_tokens = None
        gemini = GeminiHarness if name == "gemini" else GeminiVertexHarness
        built = gemini(gemini_server)
    elif name in ("bedrock", "bedrock_converse"):
        monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
        for variable, value in AWS_ENV.items():
            monkeypatch.setenv(variable, value)
        for variable in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "ANTHROPIC_BEDROCK_BASE_URL"):
            monkeypatch.delenv(variable, raising=False)
        monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
        bedrock: FakeBedrockServer = request.getfixturevalue("bedrock_server")
        bedrock.reset()
        built = BedrockHarness(bedrock) if name == "bedrock" else BedrockConverseHarness(bedrock)
    elif name == "vertex":
        vertex: FakeVertexServer = request.getfixturevalue("vertex_server")
        vertex.reset()
        vertex.count_tokens = None
        built = VertexHarness(vertex)
    elif name in ("azure", "azure_responses"):
        azure: FakeAzureOpenAIServer = request.getfixturevalue("azure_server")
        azure.reset()
        built = (AzureHarness if name == "azure" else AzureResponsesHarness)(azure)
    elif name == "fake":
        built = FakeProviderHarness()
    else:
        built = FakeClientHarness()
    try:
        yield built
    finally:
        built.close()
