"""Streaming through the real ``openai`` SDK against FakeOpenAIServer on 127.0.0.1: deltas,
partial values, usage from the include_usage chunk, the result equal to run()'s, retries only
before the first text, partial_text after it, and the async twin."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from scriptorium import Engine, errors
from scriptorium.llm.retry import RetryHooks
from scriptorium.testing import FakeOpenAIServer, FixedClock, SequentialIds
from scriptorium.usecase import Done, PartialValue, StreamEvent, TextDelta
from tests.comparable import comparable

KEY = "sk-openai-stream-canary-41f9e2"
SCHEMA = {
    "type": "object",
    "required": ["name", "email"],
    "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
    "additionalProperties": False,
}
GOOD = '{"name": "Ada Lovelace", "email": "ada@example.com"}'


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default_text=None) as fake:
        yield fake


@pytest.fixture
def fake(server: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    server.reset()
    yield server
    server.reset()


def _project(root: Path, url: str, strategy: str = "auto") -> Path:
    (root / "prompts").mkdir()
    (root / "profiles").mkdir()
    (root / "prompts" / "contact.schema.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    (root / "prompts" / "contact.prompt.md").write_text(
        "---\nprofile: gpt\noutput:\n  format: json_schema\n  schema: contact.schema.json\n"
        f"  strategy: {strategy}\n---\nExtract the contact from: {{{{ text }}}}\n",
        encoding="utf-8",
    )
    (root / "prompts" / "hello.prompt.md").write_text(
        "---\nprofile: gpt\n---\nSay hello to {{ name }}.\n", encoding="utf-8"
    )
    (root / "profiles" / "gpt.yaml").write_text(
        f"provider: openai\nmodel: gpt-4.1-mini\nendpoint: {url}\n"
        "api_key_env: OPENAI_API_KEY\nsettings: {max_tokens: 256, max_retries: 2}\n",
        encoding="utf-8",
    )
    return root


async def _no_sleep(_seconds: float) -> None:
    return None


def _engine(root: Path) -> Engine:
    hooks = RetryHooks(sleep=lambda _s: None, asleep=_no_sleep)
    return Engine(
        root,
        env={"OPENAI_API_KEY": KEY},
        clock=FixedClock(),
        new_id=SequentialIds(),
        retry_hooks=hooks,
    )


@pytest.fixture
def root(tmp_path: Path, server: FakeOpenAIServer) -> Path:
    return _project(tmp_path, server.url)


def _text(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def test_deltas_partials_and_usage(root: Path, fake: FakeOpenAIServer) -> None:
    """Deltas add up to the output, partials end at the value, usage comes from the last chunk."""
    fake.reply(GOOD, prompt_tokens=40, completion_tokens=12, chunks=7)
    events = list(_engine(root).stream("contact", inputs={"text": "Ada"}))
    done = events[-1]
    assert isinstance(done, Done)
    assert _text(events) == done.result.output.text == GOOD
    assert len([e for e in events if isinstance(e, TextDelta)]) > 3
    partials = [e.value for e in events if isinstance(e, PartialValue)]
    assert partials[-1] == done.result.validation.value == json.loads(GOOD)
    assert done.result.usage.input_tokens == 40
    assert done.result.usage.output_tokens == 12
    sent = fake.requests[0].body
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}


def test_stream_result_equals_run_result(root: Path, fake: FakeOpenAIServer) -> None:
    """The same scripted reply, run and streamed: equal results but for ids, times, latency."""
    fake.reply(GOOD, prompt_tokens=40, completion_tokens=12)
    fake.reply(GOOD, prompt_tokens=40, completion_tokens=12)
    ran = _engine(root).run("contact", inputs={"text": "Ada"})
    streamed = _engine(root).stream("contact", inputs={"text": "Ada"}).result()
    assert comparable(streamed) == comparable(ran)


def test_tool_strategy_streams_the_arguments(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    """With a forced function call the deltas are its arguments, and the result is run()'s."""
    root = _project(tmp_path, fake.url, strategy="tool")
    fake.reply_tool(GOOD)
    fake.reply_tool(GOOD)
    ran = _engine(root).run("contact", inputs={"text": "Ada"})
    events = list(_engine(root).stream("contact", inputs={"text": "Ada"}))
    done = events[-1]
    assert isinstance(done, Done)
    assert _text(events) == GOOD
    assert comparable(done.result) == comparable(ran)


def test_errors_before_the_first_text_are_retried(root: Path, fake: FakeOpenAIServer) -> None:
    """A 429 and an error chunk before any text are retried; the third attempt streams."""
    fake.fail(429, code="rate_limit_exceeded")
    fake.fail_midstream("")
    fake.reply("Hello, Ada!")
    result = _engine(root).stream("hello", inputs={"name": "Ada"}).result()
    assert result.output.text == "Hello, Ada!"
    assert result.usage.llm_calls == 3


def test_error_chunk_after_the_first_text_is_not_retried(
    root: Path, fake: FakeOpenAIServer
) -> None:
    """An error chunk after text: LLMGenerateError with partial_text, one request, no key."""
    fake.fail_midstream("Hello, A", chunks=3)
    fake.reply("Hello, Ada!")
    with pytest.raises(errors.LLMGenerateError) as caught:
        _engine(root).stream("hello", inputs={"name": "Ada"}).result()
    assert caught.value.partial_text == "Hello, A"
    assert caught.value.reason == "server_error"
    assert KEY not in repr(caught.value)
    assert len(fake.requests) == 1


def test_async_twin_and_reset_mid_stream(root: Path, fake: FakeOpenAIServer) -> None:
    """astream streams the same text; a reset after text is a connection failure with it."""
    fake.reply("Hello there, Ada!", chunks=4)
    fake.reset_midstream("Hello", chunks=2)

    async def run() -> tuple[list[StreamEvent], BaseException | None]:
        engine = _engine(root)
        async with engine.astream("hello", inputs={"name": "Ada"}) as stream:
            events = [e async for e in stream]
        try:
            await engine.astream("hello", inputs={"name": "Ada"}).result()
        except errors.LLMGenerateError as err:
            return events, err
        return events, None

    events, failure = asyncio.run(run())
    assert _text(events) == "Hello there, Ada!"
    assert isinstance(failure, errors.LLMGenerateError)
    assert failure.partial_text == "Hello"
    assert failure.reason == "connection"


def test_a_refusal_streams_its_text_and_ends_as_run_does(
    root: Path, fake: FakeOpenAIServer
) -> None:
    """A refusal arrives as refusal deltas: they are the text, and the result is run()'s (finish
    reason refusal, a refusal issue, no repair)."""
    fake.reply(None, refusal="I can't help with that.", chunks=5)
    fake.reply(None, refusal="I can't help with that.")
    streamed_events = list(_engine(root).stream("contact", inputs={"text": "Ada"}))
    ran = _engine(root).run("contact", inputs={"text": "Ada"})
    done = streamed_events[-1]
    assert isinstance(done, Done)
    assert _text(streamed_events) == "I can't help with that."
    assert done.result.finish_reason == "refusal"
    assert comparable(done.result) == comparable(ran)
