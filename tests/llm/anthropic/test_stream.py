"""Streaming through the real ``anthropic`` SDK against FakeAnthropicServer on 127.0.0.1: deltas,
partial values, the result equal to run()'s, retries only before the first text, partial_text
after it, the async twin and repair."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from scriptorium import Engine, errors
from scriptorium.llm.retry import RetryHooks
from scriptorium.testing import FakeAnthropicServer, FixedClock, SequentialIds
from scriptorium.usecase import (
    AttemptStarted,
    Done,
    PartialValue,
    StreamEvent,
    TextDelta,
)
from tests.comparable import comparable

KEY = "sk-ant-stream-canary-7e21c0d9"
SCHEMA = {
    "type": "object",
    "required": ["name", "email"],
    "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
    "additionalProperties": False,
}
GOOD = '{"name": "Ada Lovelace", "email": "ada@example.com"}'
USAGE = {"input_tokens": 31, "output_tokens": 17}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(default_text=None) as fake:
        yield fake


@pytest.fixture
def fake(server: FakeAnthropicServer) -> Iterator[FakeAnthropicServer]:
    server.reset()
    yield server
    server.reset()


def _project(root: Path, url: str) -> Path:
    (root / "prompts").mkdir()
    (root / "profiles").mkdir()
    (root / "prompts" / "contact.schema.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    (root / "prompts" / "contact.prompt.md").write_text(
        "---\nprofile: claude\noutput:\n  format: json_schema\n  schema: contact.schema.json\n"
        "  repair_attempts: 1\n---\nExtract the contact from: {{ text }}\n",
        encoding="utf-8",
    )
    (root / "prompts" / "hello.prompt.md").write_text(
        "---\nprofile: claude\n---\nSay hello to {{ name }}.\n", encoding="utf-8"
    )
    (root / "profiles" / "claude.yaml").write_text(
        f"provider: anthropic\nmodel: claude-sonnet-4-6\nendpoint: {url}\n"
        "api_key_env: ANTHROPIC_API_KEY\nsettings: {max_tokens: 256, max_retries: 2}\n",
        encoding="utf-8",
    )
    return root


def _engine(root: Path, *, repair: bool = False) -> Engine:
    # Backoff sleeps are recorded, not slept.
    hooks = RetryHooks(sleep=lambda _s: None, asleep=_no_sleep)
    return Engine(
        root,
        env={"ANTHROPIC_API_KEY": KEY},
        repair=repair,
        clock=FixedClock(),
        new_id=SequentialIds(),
        retry_hooks=hooks,
    )


async def _no_sleep(_seconds: float) -> None:
    return None


@pytest.fixture
def root(tmp_path: Path, server: FakeAnthropicServer) -> Path:
    return _project(tmp_path, server.url)


def _text(events: list[StreamEvent], attempt: int = 1) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta) and e.attempt == attempt)


def test_deltas_add_up_and_partials_grow_to_the_value(
    root: Path, fake: FakeAnthropicServer
) -> None:
    """Through the SDK: several deltas concatenating to the output, partial values that only grow
    and end at the validated value, and a Done whose result has the server's usage."""
    fake.reply(GOOD, usage=USAGE, chunks=5)
    with _engine(root).stream("contact", inputs={"text": "Ada"}) as stream:
        events = list(stream)
    done = events[-1]
    assert isinstance(done, Done)
    result = done.result
    assert len([e for e in events if isinstance(e, TextDelta)]) == -(-len(GOOD) // 5)
    assert _text(events) == result.output.text == GOOD
    partials = [e.value for e in events if isinstance(e, PartialValue)]
    assert partials[0] == {}
    assert partials[-1] == result.validation.value == json.loads(GOOD)
    assert result.usage.input_tokens == 31
    assert result.usage.output_tokens == 17
    assert result.usage.llm_calls == 1
    assert fake.requests[0].body["stream"] is True


def test_stream_result_equals_run_result(root: Path, fake: FakeAnthropicServer) -> None:
    """The same scripted reply, run and streamed: equal results but for ids, times, latency."""
    fake.reply(GOOD, usage=USAGE)
    fake.reply(GOOD, usage=USAGE)
    ran = _engine(root).run("contact", inputs={"text": "Ada"})
    streamed = _engine(root).stream("contact", inputs={"text": "Ada"}).result()
    assert comparable(streamed) == comparable(ran)
    assert streamed.usage.cost_micro == ran.usage.cost_micro > 0


def test_overloaded_before_the_first_event_is_retried(
    root: Path, fake: FakeAnthropicServer
) -> None:
    """A 529, then an error event before any text: both retried; the third attempt streams."""
    fake.fail(529)
    fake.fail_midstream("")
    fake.reply("Hello, Ada!")
    result = _engine(root).stream("hello", inputs={"name": "Ada"}).result()
    assert result.output.text == "Hello, Ada!"
    assert result.usage.llm_calls == 3
    assert len(fake.requests) == 3


def test_error_event_after_the_first_delta_is_not_retried(
    root: Path, fake: FakeAnthropicServer
) -> None:
    """An error event after text has arrived: LLMGenerateError with partial_text, one request."""
    fake.fail_midstream('{"name": "Ada', chunks=4)
    fake.reply(GOOD)
    stream = _engine(root).stream("contact", inputs={"text": "Ada"})
    seen: list[StreamEvent] = []
    with pytest.raises(errors.LLMGenerateError) as caught:
        seen.extend(stream)
    err = caught.value
    assert err.partial_text == '{"name": "Ada'
    assert err.reason == "overloaded"
    assert err.attempts == 1
    assert err.prompt_id == "contact"
    assert KEY not in repr(err)
    assert len(fake.requests) == 1
    assert fake.pending == 1


def test_connection_reset_mid_stream_keeps_partial_text(
    root: Path, fake: FakeAnthropicServer
) -> None:
    """A connection dropped after some text is a connection failure with that text."""
    fake.reset_midstream("Hello, A", chunks=3)
    stream = _engine(root).stream("hello", inputs={"name": "Ada"})
    with pytest.raises(errors.LLMGenerateError) as caught:
        stream.result()
    assert caught.value.partial_text == "Hello, A"
    assert caught.value.reason == "connection"
    assert len(fake.requests) == 1


def test_async_twin(root: Path, fake: FakeAnthropicServer) -> None:
    """astream through the async SDK: the same deltas, partials and result as the sync stream."""
    fake.reply(GOOD, usage=USAGE, chunks=6)
    fake.reply(GOOD, usage=USAGE, chunks=6)
    sync_events = list(_engine(root).stream("contact", inputs={"text": "Ada"}))

    async def collect() -> list[StreamEvent]:
        async with _engine(root).astream("contact", inputs={"text": "Ada"}) as stream:
            return [e async for e in stream]

    async_events = asyncio.run(collect())
    assert [e for e in async_events if not isinstance(e, Done)] == [
        e for e in sync_events if not isinstance(e, Done)
    ]
    last_sync, last_async = sync_events[-1], async_events[-1]
    assert isinstance(last_sync, Done)
    assert isinstance(last_async, Done)
    assert comparable(last_async.result) == comparable(last_sync.result)


def test_async_error_after_first_delta(root: Path, fake: FakeAnthropicServer) -> None:
    """The async path also gives partial_text and makes one request."""
    fake.fail_midstream("Hel", error_type="api_error")

    async def run() -> None:
        stream = _engine(root).astream("hello", inputs={"name": "Ada"})
        await stream.result()

    with pytest.raises(errors.LLMGenerateError) as caught:
        asyncio.run(run())
    assert caught.value.partial_text == "Hel"
    assert caught.value.reason == "server_error"
    assert len(fake.requests) == 1


def test_repair_is_announced_after_the_stream(root: Path, fake: FakeAnthropicServer) -> None:
    """An invalid streamed answer is repaired (one more request) and announced as attempt 2."""
    fake.reply('{"name": "Ada"}')
    fake.reply(GOOD)
    events = list(_engine(root, repair=True).stream("contact", inputs={"text": "Ada"}))
    starts = [e for e in events if isinstance(e, AttemptStarted)]
    assert [(s.attempt, s.kind) for s in starts] == [(1, "initial"), (2, "repair")]
    done = events[-1]
    assert isinstance(done, Done)
    assert done.result.validation.repaired
    assert _text(events, 2) == GOOD
    assert [a.kind for a in done.result.attempts] == ["initial", "repair"]


def test_tool_strategy_streams_the_tool_input(tmp_path: Path, fake: FakeAnthropicServer) -> None:
    """With forced tool use the deltas are the tool input's JSON; the result is run()'s."""
    root = _project(tmp_path, fake.url)
    prompt = root / "prompts" / "contact.prompt.md"
    prompt.write_text(
        prompt.read_text(encoding="utf-8").replace("  repair_attempts: 1\n", "  strategy: tool\n"),
        encoding="utf-8",
    )
    value = json.loads(GOOD)
    fake.reply_tool(value)
    fake.reply_tool(value)
    ran = _engine(root).run("contact", inputs={"text": "Ada"})
    events = list(_engine(root).stream("contact", inputs={"text": "Ada"}))
    done = events[-1]
    assert isinstance(done, Done)
    assert json.loads(_text(events)) == value
    assert comparable(done.result) == comparable(ran)


def test_wrapped_tool_input_streams_the_inner_value(
    tmp_path: Path, fake: FakeAnthropicServer
) -> None:
    """An array schema travels as {"value": [...]} in the forced tool: the deltas and partial
    values are the array's, and the result is run()'s."""
    root = _project(tmp_path, fake.url)
    (root / "prompts" / "list.schema.json").write_text(
        json.dumps({"type": "array", "items": {"type": "string"}}), encoding="utf-8"
    )
    (root / "prompts" / "names.prompt.md").write_text(
        "---\nprofile: claude\noutput:\n  format: json_schema\n  schema: list.schema.json\n"
        "  strategy: tool\n---\nList names in: {{ text }}\n",
        encoding="utf-8",
    )
    names = ["Ada", "Grace", "Katherine"]
    fake.reply_tool({"value": names})
    fake.reply_tool({"value": names})
    ran = _engine(root).run("names", inputs={"text": "x"})
    events = list(_engine(root).stream("names", inputs={"text": "x"}))
    done = events[-1]
    assert isinstance(done, Done)
    assert json.loads(_text(events)) == names
    partials = [e.value for e in events if isinstance(e, PartialValue)]
    assert partials[-1] == names
    assert all(isinstance(p, list) for p in partials)
    assert comparable(done.result) == comparable(ran)
