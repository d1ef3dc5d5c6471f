"""How a stream ends, the rule of the shared reading loop (``llm.streaming.drive``/``adrive``),
through both SDK adapters against their loopback servers: only the provider's terminator makes an
answer; a body that is not a stream is the complete answer or ``invalid_response``; events are
split at CR, LF and CRLF only."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scriptorium import Engine, errors
from scriptorium._testing.http import Answer
from scriptorium.llm.anthropic import AnthropicClient
from scriptorium.llm.openai import OpenAIClient
from scriptorium.llm.retry import RetryHooks
from scriptorium.llm.streaming import EventDecoder
from scriptorium.testing import FakeAnthropicServer, FakeOpenAIServer
from scriptorium.usecase import TextDelta

KEY = "sk-stream-endings-canary-7d1e"


def _sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    body = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return (head + f"data: {body}\n\n").encode("utf-8")


def anthropic_events(pieces: list[str], *, stop: str = "end_turn") -> list[bytes]:
    """A whole Messages API stream writing ``pieces``; its last part is the terminator."""
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 9, "output_tokens": 1},
    }
    parts = [
        _sse("message_start", {"type": "message_start", "message": message}),
        _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    for piece in pieces:
        delta = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": piece},
        }
        parts.append(_sse("content_block_delta", delta))
    parts.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    end = {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 4}}
    parts.append(_sse("message_delta", end))
    parts.append(_sse("message_stop", {"type": "message_stop"}))
    return parts


def openai_events(pieces: list[str], *, finish: str = "stop") -> list[bytes]:
    """A whole Chat Completions stream writing ``pieces``: chunks, the finish reason, the usage
    chunk and ``[DONE]``."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4o-mini"}
    parts = [
        _sse(
            None,
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": p},
                        "finish_reason": None,
                    }
                ],
            },
        )
        for p in pieces
    ]
    parts.append(
        _sse(None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    )
    usage = {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
    parts.append(_sse(None, {**base, "choices": [], "usage": usage}))
    parts.append(b"data: [DONE]\n\n")
    return parts


def _stream_answer(parts: list[bytes]) -> Answer:
    return Answer(parts=tuple((0.0, p) for p in parts), content_type="text/event-stream")


@pytest.fixture(scope="module")
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture(scope="module")
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


async def _no_sleep(_seconds: float) -> None:
    return None


_OPEN: list[AnthropicClient | OpenAIClient] = []


@pytest.fixture(autouse=True)
def _closed() -> Iterator[None]:
    """Every adapter a test built is closed after it (no pooled connection left to the GC)."""
    yield
    while _OPEN:
        _OPEN.pop().close()


def _engine(tmp_path: Path, provider: str, url: str) -> Engine:
    """A project whose ``count`` prompt asks for JSON, on ``provider`` at ``url``, no retries,
    through that provider's adapter."""
    (tmp_path / "prompts").mkdir(exist_ok=True)
    (tmp_path / "profiles").mkdir(exist_ok=True)
    (tmp_path / "prompts" / "count.prompt.md").write_text(
        "---\nprofile: p\noutput: {format: json}\n---\nHow many?\n", encoding="utf-8"
    )
    model = "claude-sonnet-4-6" if provider == "anthropic" else "gpt-4o-mini"
    (tmp_path / "profiles" / "p.yaml").write_text(
        f"provider: {provider}\nmodel: {model}\nendpoint: {url}\napi_key_env: K\n"
        "settings: {max_retries: 0}\n",
        encoding="utf-8",
    )
    hooks = RetryHooks(sleep=lambda _s: None, asleep=_no_sleep)
    client = AnthropicClient(hooks=hooks) if provider == "anthropic" else OpenAIClient(hooks=hooks)
    _OPEN.append(client)
    return Engine(tmp_path, env={"K": KEY}, client=client)


PROVIDERS = ["anthropic", "openai"]


@pytest.fixture
def server(
    request: pytest.FixtureRequest,
    anthropic_server: FakeAnthropicServer,
    openai_server: FakeOpenAIServer,
) -> FakeAnthropicServer | FakeOpenAIServer:
    chosen = anthropic_server if request.param == "anthropic" else openai_server
    chosen.reset()
    return chosen


def _events(provider: str, pieces: list[str]) -> list[bytes]:
    return anthropic_events(pieces) if provider == "anthropic" else openai_events(pieces)


def _streamed(engine: Engine, asynchronous: bool) -> tuple[list[str], BaseException | None]:
    """The deltas a streamed run of ``count`` handed out, and what it failed with."""
    deltas: list[str] = []
    if not asynchronous:
        try:
            with engine.stream("count") as events:
                for event in events:
                    if isinstance(event, TextDelta):
                        deltas.append(event.text)
        except errors.LLMGenerateError as err:
            return deltas, err
        return deltas, None

    async def read() -> BaseException | None:
        try:
            async with engine.astream("count") as events:
                async for event in events:
                    if isinstance(event, TextDelta):
                        deltas.append(event.text)
        except errors.LLMGenerateError as err:
            return err
        return None

    return deltas, asyncio.run(read())


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("server", PROVIDERS, indirect=True)
def test_a_json_answer_cut_short_is_never_a_valid_shorter_value(
    tmp_path: Path, server: Any, asynchronous: bool
) -> None:
    """``"12"`` of ``1234``, then the body ends cleanly with no terminator: a ``connection``
    failure holding ``12`` as the text so far, never ``valid=True, value=12``."""
    provider = "anthropic" if isinstance(server, FakeAnthropicServer) else "openai"
    whole = _events(provider, ["12", "34"])
    cut = whole[: 3 if provider == "anthropic" else 1]  # up to and including the "12" delta
    server.push(lambda _request: _stream_answer(cut))
    deltas, err = _streamed(_engine(tmp_path, provider, server.url), asynchronous)
    assert isinstance(err, errors.LLMGenerateError), "a cut stream must fail"
    assert err.reason == "connection"
    assert err.partial_text == "".join(deltas) == "12"


@pytest.mark.parametrize("server", ["openai"], indirect=True)
@pytest.mark.parametrize("kept", ["finish", "usage"])
def test_an_openai_stream_needs_its_done_after_the_finish_reason(
    tmp_path: Path, server: FakeOpenAIServer, kept: str
) -> None:
    """The finish reason alone, or with the usage chunk, but no ``[DONE]``: cut short."""
    whole = openai_events(["12", "34"])
    cut = whole[:-2] if kept == "finish" else whole[:-1]
    server.push(lambda _request: _stream_answer(cut))
    _, err = _streamed(_engine(tmp_path, "openai", server.url), asynchronous=False)
    assert isinstance(err, errors.LLMGenerateError)
    assert (err.reason, err.partial_text) == ("connection", "1234")


@pytest.mark.parametrize("server", ["openai"], indirect=True)
def test_done_without_a_finish_reason_is_cut_short(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    whole = openai_events(["12", "34"])
    server.push(lambda _request: _stream_answer([*whole[:2], whole[-1]]))
    _, err = _streamed(_engine(tmp_path, "openai", server.url), asynchronous=True)
    assert isinstance(err, errors.LLMGenerateError)
    assert (err.reason, err.partial_text) == ("connection", "1234")


@pytest.mark.parametrize("server", ["anthropic"], indirect=True)
def test_an_anthropic_stream_needs_message_stop(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    """Everything but ``message_stop`` (the stop reason and usage included) is still cut short."""
    server.push(lambda _request: _stream_answer(anthropic_events(["12", "34"])[:-1]))
    _, err = _streamed(_engine(tmp_path, "anthropic", server.url), asynchronous=False)
    assert isinstance(err, errors.LLMGenerateError)
    assert (err.reason, err.partial_text) == ("connection", "1234")


@pytest.mark.parametrize("server", PROVIDERS, indirect=True)
def test_a_whole_stream_still_makes_its_answer(tmp_path: Path, server: Any) -> None:
    provider = "anthropic" if isinstance(server, FakeAnthropicServer) else "openai"
    server.push(lambda _request: _stream_answer(_events(provider, ["12", "34"])))
    result = _engine(tmp_path, provider, server.url).stream("count").result()
    assert (result.validation.valid, result.validation.value) == (True, 1234)


@pytest.mark.parametrize("server", PROVIDERS, indirect=True)
@pytest.mark.parametrize("separator", ["\u2028", "\u0085", "\u2029", "\x0c"])
def test_events_are_split_at_line_ends_only(tmp_path: Path, server: Any, separator: str) -> None:
    """Raw U+2028, U+0085, U+2029 or form feed inside an event's JSON is text, not a line end."""
    provider = "anthropic" if isinstance(server, FakeAnthropicServer) else "openai"
    pieces = [f'"a{separator}', f'b{separator}c"']
    server.push(lambda _request: _stream_answer(_events(provider, pieces)))
    result = _engine(tmp_path, provider, server.url).stream("count").result()
    assert result.validation.value == f"a{separator}b{separator}c"


@pytest.mark.parametrize("server", PROVIDERS, indirect=True)
@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_crlf_and_cr_end_lines_as_lf_does(tmp_path: Path, server: Any, newline: str) -> None:
    provider = "anthropic" if isinstance(server, FakeAnthropicServer) else "openai"
    parts = [p.replace(b"\n", newline.encode()) for p in _events(provider, ["12", "34"])]
    server.push(lambda _request: _stream_answer(parts))
    result = _engine(tmp_path, provider, server.url).stream("count").result()
    assert result.validation.value == 1234


@pytest.mark.parametrize("server", PROVIDERS, indirect=True)
@pytest.mark.parametrize(
    "body",
    [
        Answer(200, b"", content_type="application/json"),
        Answer(200, b"", content_type="text/plain"),
        Answer(200, b"<!doctype html><p>Bad gateway</p>", content_type="text/html"),
        Answer(200, b"[1, 2]", content_type="application/json"),
        Answer(200, b"{" * 5000 + b"}" * 5000, content_type="application/json"),
    ],
    ids=["empty-json", "empty-text", "html", "json-array", "deep-json"],
)
def test_a_body_that_is_no_stream_and_no_answer_is_invalid(
    tmp_path: Path, server: Any, body: Answer
) -> None:
    provider = "anthropic" if isinstance(server, FakeAnthropicServer) else "openai"
    server.push(lambda _request: body)
    with pytest.raises(errors.LLMGenerateError) as caught:
        _engine(tmp_path, provider, server.url).stream("count").result()
    assert caught.value.reason == "invalid_response"


def test_the_event_decoder_follows_the_server_sent_events_rules() -> None:
    """CRLF split across chunks, comments, several data lines, an event name, a field without a
    space; an event the body cuts off is never dispatched."""
    decoder = EventDecoder()
    events = []
    for chunk in [
        b": hello\r",
        b"\nevent: a\r\ndata: 1\r",
        b"\ndata:2\r\n\r\n",
        b"data: 3\n\n",
        b"data: 4",
    ]:
        events.extend(decoder.feed(chunk))
    assert events == [("a", "1\n2"), (None, "3")]


def test_an_event_that_is_not_utf8_is_invalid() -> None:
    with pytest.raises(errors.LLMGenerateError) as caught:
        EventDecoder().feed(b"data: \xff\xfe\n\n")
    assert caught.value.reason == "invalid_response"
