"""The one adapter shape both SDK adapters share: the same verify request, the same sdk_factory
injection, and one classifier per provider that also covers what only a stream raises."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from scriptorium import Engine
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.adapter import VERIFY_PROMPT, key_of, verify_request
from scriptorium.llm.anthropic.client import AnthropicClient
from scriptorium.llm.anthropic.sdk import classify as anthropic_classify
from scriptorium.llm.model import LLMRequest, Target
from scriptorium.llm.openai.client import OpenAIClient
from scriptorium.llm.openai.sdk import classify as openai_classify
from scriptorium.llm.openai.sdk import default_factory as openai_factory
from scriptorium.llm.openai.sdk import sdk as openai_sdk
from scriptorium.testing import FakeAnthropicServer, FakeClient, FakeOpenAIServer

KEY = "sk-adapter-shape-canary-77c1"


@pytest.fixture(scope="module")
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


def test_the_verify_request_is_one_ping_without_retries() -> None:
    """One short user message, the output budget asked for, no retries, 30 seconds."""
    request = verify_request(Target(provider="p", model="m"), KEY, max_tokens=16)
    assert [(m.role, m.content) for m in request.messages] == [("user", VERIFY_PROMPT)]
    settings = request.settings
    assert (settings.max_tokens, settings.max_retries, settings.timeout_s) == (16, 0, 30.0)
    assert key_of(request) == KEY
    assert key_of(request.model_copy(update={"api_key": None})) == ""


def test_both_adapters_verify_with_the_shared_request(
    openai_server: FakeOpenAIServer, anthropic_server: FakeAnthropicServer
) -> None:
    """Anthropic asks for 1 output token, OpenAI for 16; the message and the no-retry rule are the
    same: a 529 is reported at once, not retried."""
    openai_server.reset()
    anthropic_server.reset()
    with OpenAIClient() as openai, AnthropicClient() as anthropic:
        openai.verify(
            Target(provider="openai", model="gpt-4o-mini", endpoint=openai_server.url), KEY
        )
        anthropic.verify(
            Target(provider="anthropic", model="claude-haiku-4-5", endpoint=anthropic_server.url),
            KEY,
        )
        sent_openai = openai_server.requests[-1].body
        sent_anthropic = anthropic_server.requests[-1].body
        assert sent_openai["messages"] == sent_anthropic["messages"]
        assert sent_openai["messages"] == [{"role": "user", "content": VERIFY_PROMPT}]
        assert (sent_openai["max_tokens"], sent_anthropic["max_tokens"]) == (16, 1)
        anthropic_server.fail(529)
        with pytest.raises(LLMGenerateError) as caught:
            anthropic.verify(
                Target(
                    provider="anthropic", model="claude-haiku-4-5", endpoint=anthropic_server.url
                ),
                KEY,
            )
        assert (caught.value.reason, caught.value.attempts) == ("overloaded", 1)


def test_an_engine_client_without_verify_gets_the_shared_request(tmp_path: Path) -> None:
    """The engine's fallback for a client that cannot verify sends the same request, with the
    profile's options."""
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "p.yaml").write_text(
        "provider: fake\nmodel: m\noptions: {responses: [x]}\n", encoding="utf-8"
    )
    client = FakeClient(["pong"])
    response = Engine(tmp_path, client=client).verify("p")
    assert response.text == "pong"
    (sent,) = client.requests
    assert [m.content for m in sent.messages] == [VERIFY_PROMPT]
    assert (sent.settings.max_tokens, sent.settings.max_retries) == (1, 0)
    assert sent.options == {"responses": ["x"]}


def test_the_openai_adapter_takes_an_sdk_factory(openai_server: FakeOpenAIServer) -> None:
    """Like the Anthropic adapter, the OpenAI adapter builds its SDK clients with the factory it
    is given, once per endpoint and key."""
    openai_server.reset()
    made: list[tuple[bool, str]] = []

    def factory(is_async: bool, key: str, base_url: str) -> Any:
        made.append((is_async, base_url))
        return openai_factory(is_async, key, base_url)

    request = LLMRequest(
        target=Target(provider="openai", model="gpt-4o-mini", endpoint=openai_server.url),
        api_key=KEY,
        messages=verify_request(Target(provider="openai"), None).messages,
    )
    with OpenAIClient(sdk_factory=factory) as client:
        client.generate(request)
        client.generate(request)
    assert made == [(False, openai_server.url)]


def test_each_classifier_reads_a_connection_broken_mid_body_as_connection() -> None:
    """A raw ``httpx2`` error (a stream's body cut off, which the SDKs do not wrap) is a retryable
    connection failure for both providers; a read timeout is a timeout."""
    for classify in (anthropic_classify, openai_classify):
        broken = classify(httpx2.RemoteProtocolError("peer closed connection"))
        assert (broken.reason, broken.retryable) == ("connection", True)
        slow = classify(httpx2.ReadTimeout("slow"))
        assert (slow.reason, slow.retryable) == ("timeout", True)


def test_the_openai_classifier_reads_an_error_chunk_by_its_code() -> None:
    """An error chunk inside a streamed 200 (an ``APIError`` without a status) is classified as
    the status its code names."""
    sdk = openai_sdk()
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    chunk = sdk.APIError("slow down", request, body={"code": "rate_limit_exceeded"})
    failure = openai_classify(chunk)
    assert (failure.reason, failure.retryable, failure.http_status) == ("rate_limited", True, 429)
