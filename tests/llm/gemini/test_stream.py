"""Streaming through ``streamGenerateContent?alt=sse`` with the real SDK: text and thought
deltas, Gemini's terminator (a final ``finishReason``), errors inside the stream, and answers
that are not a stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from scriptorium._testing.gemini_server import FakeGeminiServer, answer_body
from scriptorium._testing.http import Answer, RecordedRequest, sse
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.client import ReasoningChunk
from scriptorium.llm.gemini.client import GeminiClient
from scriptorium.llm.model import LLMRequest, LLMResponse, Target
from scriptorium.llm.retry import RetryHooks
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message

KEY = "AIza-stream-canary-0123456789abc"


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer(default_text=None) as fake:
        yield fake


@pytest.fixture
def server(shared_server: FakeGeminiServer) -> FakeGeminiServer:
    shared_server.clear()
    return shared_server


@pytest.fixture
def client() -> Iterator[GeminiClient]:
    adapter = GeminiClient(hooks=RetryHooks(sleep=lambda s: None, jitter=lambda lo, hi: 1.0))
    yield adapter
    adapter.close()


def request(server: FakeGeminiServer, **settings: Any) -> LLMRequest:
    return LLMRequest(
        target=Target(provider="gemini", model="gemini-2.5-flash", endpoint=server.url),
        api_key=KEY,
        messages=(Message(role="user", content="Say hello."),),
        settings=ExecutionSettings(**settings),
    )


def split(items: list[object]) -> tuple[list[ReasoningChunk], list[str], LLMResponse]:
    *pieces, last = items
    assert isinstance(last, LLMResponse)
    thoughts = [p for p in pieces if isinstance(p, ReasoningChunk)]
    text = [p for p in pieces if isinstance(p, str) and not isinstance(p, ReasoningChunk)]
    return thoughts, text, last


def test_thoughts_stream_before_the_text_and_the_response_adds_them_up(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.reply("Hello, world!", thoughts="Greeting them.", thoughts_tokens=6, chunks=4)
    thoughts, text, response = split(list(client.stream(request(server))))
    assert "".join(thoughts) == "Greeting them."
    assert text == ["Hell", "o, w", "orld", "!"]
    assert (response.text, response.reasoning) == ("Hello, world!", "Greeting them.")
    assert (response.usage.output_tokens, response.usage.reasoning_tokens) == (11, 6)
    assert response.finish_reason == "stop"
    assert server.requests[-1].path.endswith(":streamGenerateContent?alt=sse")


def test_a_chunk_with_a_thought_and_text_hands_out_both_in_order(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    """One chunk may carry a thought part and a text part: the thought comes out as a reasoning
    piece, then the text, and both reach the response."""
    usage = {"promptTokenCount": 4, "candidatesTokenCount": 3, "thoughtsTokenCount": 2}
    mixed = answer_body("Hi", model="gemini-2.5-flash", thoughts="Short.", finish_reason=None)
    last = answer_body(" there", model="gemini-2.5-flash", usage=usage)
    parts = ((0.0, sse(None, mixed)), (0.0, sse(None, last)))
    server.push(lambda _r: Answer(parts=parts, content_type="text/event-stream"))
    *pieces, response = list(client.stream(request(server)))
    assert pieces == ["Short.", "Hi", " there"]
    assert [isinstance(p, ReasoningChunk) for p in pieces] == [True, False, False]
    assert isinstance(response, LLMResponse)
    assert (response.text, response.reasoning) == ("Hi there", "Short.")
    assert (response.usage.output_tokens, response.usage.reasoning_tokens) == (5, 2)


def test_a_stream_without_a_final_finish_reason_is_a_connection_failure(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    whole = FakeGeminiServer()
    whole.reply("partial answer", chunks=4)
    stream_path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    answer = whole.answer_unsent(RecordedRequest("POST", stream_path, {}, {}, b""))
    assert answer.parts is not None
    kept = tuple(p for p in answer.parts if b"finishReason" not in p[1])
    server.push(lambda _r: Answer(parts=kept, content_type="text/event-stream"))
    with pytest.raises(LLMGenerateError) as caught:
        list(client.stream(request(server, max_retries=0)))
    assert caught.value.reason == "connection"
    assert caught.value.partial_text == "partial answer"


def test_an_error_inside_the_stream_is_classified_and_keeps_the_partial_text(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.fail_midstream("Some text", status=503, chunks=4)
    with pytest.raises(LLMGenerateError) as caught:
        list(client.stream(request(server)))
    assert caught.value.reason == "server_error"
    assert caught.value.partial_text == "Some text"
    assert len(server.requests) == 1  # text was handed out: never retried


def test_a_rate_limit_before_the_stream_starts_is_retried(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.fail(429)
    server.reply("second try")
    _, text, response = split(list(client.stream(request(server))))
    assert "".join(text) == "second try"
    assert response.attempts == 2


def test_a_json_answer_to_a_stream_request_is_read_as_the_whole_answer(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    body = answer_body("whole", model="gemini-2.5-flash", usage={"promptTokenCount": 3})
    server.reply_json(body)
    _, text, response = split(list(client.stream(request(server))))
    assert text == ["whole"]
    assert response.text == "whole"


def test_a_json_array_of_chunks_is_folded_as_one_answer(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    """Without ``alt=sse`` the API answers a JSON array of chunks: read as the whole answer."""
    first = answer_body("Hel", model="m", finish_reason=None)
    last = answer_body("lo", model="m", usage={"promptTokenCount": 3, "candidatesTokenCount": 2})
    server.malformed(json.dumps([first, last]).encode())
    _, _, response = split(list(client.stream(request(server))))
    assert response.text == "Hello"
    assert response.usage.output_tokens == 2


def test_a_blocked_prompt_ends_the_stream_as_a_refusal(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.reply(block_reason="SAFETY")
    _, text, response = split(list(client.stream(request(server))))
    assert text == []
    assert response.finish_reason == "refusal"


def test_async_streams_the_same_pieces(server: FakeGeminiServer) -> None:
    async def main() -> list[object]:
        async with GeminiClient() as adapter:
            server.reply("async pieces", thoughts="hm", chunks=5)
            return [item async for item in adapter.astream(request(server))]

    thoughts, text, response = split(asyncio.run(main()))
    assert ("".join(thoughts), "".join(text)) == ("hm", "async pieces")
    assert response.reasoning == "hm"
