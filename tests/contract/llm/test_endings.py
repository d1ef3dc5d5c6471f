"""The LLM client contract, part four: endings and streams as recordings of real traffic show them.

A stream reads like the same answer unstreamed: a tool-strategy stream cut by ``max_tokens`` is a
``length`` result with its partial text, usage and cost (Claude on the Anthropic API, Bedrock
and Vertex AI); streamed usage keeps the cache writes split by TTL. Any ending but a normal stop
is no valid answer by itself (Gemini's ``UNEXPECTED_TOOL_CALL`` with no text, ``MODEL_ARMOR``, a
value no table knows).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from scriptorium._testing.http import sse
from scriptorium.llm.model import LLMResponse, StructuredOutput
from scriptorium.llm.pricing import PRICE_TABLE
from scriptorium.usecase import Done, RunRequest, RunResult
from tests.conftest import RunnerFactory
from tests.contract.llm.harnesses import SAY, Harness, runner_over

CLAUDE = ["anthropic", "bedrock", "vertex"]
GEMINI = ["gemini", "gemini_vertex"]
PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
USAGE = {"input_tokens": 1200, "output_tokens": 64}


def _cut_tool_stream(model: str) -> bytes:
    """A Messages API stream whose forced tool call (``person``) stops at ``max_tokens``."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_cut",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": USAGE["input_tokens"], "output_tokens": 1},
        },
    }
    block = {"type": "tool_use", "id": "toolu_cut", "name": "person", "input": {}}
    events = [
        sse("message_start", start),
        sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
    ]
    for piece in ('{"name": "Ada', ' Lovelace", "ag'):
        delta = {"type": "input_json_delta", "partial_json": piece}
        events.append(
            sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        )
    events.append(sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": "max_tokens", "stop_sequence": None},
        "usage": {"output_tokens": USAGE["output_tokens"]},
    }
    events.append(sse("message_delta", end))
    events.append(sse("message_stop", {"type": "message_stop"}))
    return b"".join(events)


def _server(harness: Harness) -> Any:
    """The fake server behind an HTTP harness (the Claude and Gemini ones here)."""
    return getattr(harness, "server")  # noqa: B009  # not every harness has one


def _result(events: list[Any]) -> RunResult:
    done = events[-1]
    assert isinstance(done, Done)
    return done.result


def _price(harness: Harness, usage: dict[str, int], one_hour: int = 0, writes: int = 0) -> int:
    price = PRICE_TABLE[harness.priced_as or harness.model]
    total = (
        usage["input_tokens"] * price.input
        + usage["output_tokens"] * price.output
        + (writes - one_hour) * price.cache_write
        + one_hour * price.input * 2
    )
    return (total + 500_000) // 1_000_000


@pytest.mark.parametrize("harness", CLAUDE, indirect=True)
def test_a_tool_stream_cut_by_max_tokens_is_a_length_result_with_its_partial_text(
    harness: Harness, make_runner: RunnerFactory
) -> None:
    spec = StructuredOutput(schema_=PERSON, strategy="tool", name="person")
    _server(harness).replay(
        _cut_tool_stream(harness.model), headers={"content-type": "text/event-stream"}
    )
    items = harness.run(lambda client: list(client.stream(harness.request(structured_output=spec))))
    response = items[-1]
    assert isinstance(response, LLMResponse)
    assert response.finish_reason == "length"
    assert response.text == '{"name": "Ada Lovelace", "ag'
    assert "".join(i for i in items[:-1] if isinstance(i, str)) == response.text
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1200, 64)
    assert response.usage.cost_micro == _price(harness, USAGE)
    # A run of it: the output is invalid (truncated), and the tokens paid for are counted.
    runner = runner_over_tool(harness, make_runner)
    _server(harness).replay(
        _cut_tool_stream(harness.model), headers={"content-type": "text/event-stream"}
    )
    events = harness.run(lambda _client: list(runner.stream(RunRequest(prompt_id="person"))))
    result = _result(events)
    assert result.finish_reason == "length"
    assert not result.validation.valid
    assert result.validation.issues[0].keyword == "truncated"
    assert result.usage.output_tokens == 64
    assert result.usage.cost_micro == _price(harness, USAGE)


def runner_over_tool(harness: Harness, make_runner: RunnerFactory) -> Any:
    prompt = (
        "---\nprofile: p\noutput:\n  format: json_schema\n"
        f"  schema: {json.dumps(PERSON)}\n  strategy: tool\n  repair_attempts: 0\n---\nWho?\n"
    )
    return make_runner(
        harness.client,
        prompts={"person": prompt},
        profiles={"p": harness.profile()},
        env=harness.env,
    )


@pytest.mark.parametrize("harness", CLAUDE, indirect=True)
def test_streamed_usage_keeps_the_cache_writes_split_by_ttl(harness: Harness) -> None:
    usage = {
        **USAGE,
        "cache_creation_input_tokens": 3000,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_1h_input_tokens": 2000, "ephemeral_5m_input_tokens": 1000},
    }
    _server(harness).reply("cached", usage=usage)
    _server(harness).reply("cached", usage=usage, chunks=3)
    plain = harness.run(lambda client: client.generate(harness.request()))
    items = harness.run(lambda client: list(client.stream(harness.request())))
    streamed = items[-1]
    assert isinstance(streamed, LLMResponse)
    assert (
        streamed.usage.cache_write_1h_input_tokens
        == plain.usage.cache_write_1h_input_tokens
        == 2000
    )
    assert streamed.usage.cache_creation_input_tokens == 3000
    assert streamed.usage.cost_micro == plain.usage.cost_micro == _price(harness, USAGE, 2000, 3000)


@pytest.mark.parametrize("harness", GEMINI, indirect=True)
@pytest.mark.parametrize("stream", [False, True])
def test_an_unexpected_tool_call_with_no_text_is_no_valid_answer(
    harness: Harness, make_runner: RunnerFactory, stream: bool
) -> None:
    _server(harness).reply("", finish_reason="UNEXPECTED_TOOL_CALL")
    runner = runner_over(harness, harness.client, make_runner)
    if stream:
        result = _result(harness.run(lambda _client: list(runner.stream(SAY))))
    else:
        result = harness.run(lambda _client: runner.run(SAY))
    assert result.finish_reason == "UNEXPECTED_TOOL_CALL"
    assert not result.validation.valid
    assert result.validation.issues[0].keyword == "finish_reason"


@pytest.mark.parametrize("harness", GEMINI, indirect=True)
@pytest.mark.parametrize(
    ("ending", "finish", "keyword"),
    [
        ("MODEL_ARMOR", "refusal", "refusal"),
        ("IMAGE_SAFETY", "refusal", "refusal"),
        ("OTHER", "OTHER", "finish_reason"),
        ("LANGUAGE", "LANGUAGE", "finish_reason"),
        ("MALFORMED_FUNCTION_CALL", "MALFORMED_FUNCTION_CALL", "finish_reason"),
        ("A_VALUE_NO_TABLE_KNOWS", "A_VALUE_NO_TABLE_KNOWS", "finish_reason"),
    ],
)
def test_an_ending_other_than_stop_makes_the_run_invalid(
    harness: Harness, make_runner: RunnerFactory, ending: str, finish: str, keyword: str
) -> None:
    _server(harness).reply("Some text.", finish_reason=ending)
    runner = runner_over(harness, harness.client, make_runner)
    result = harness.run(lambda _client: runner.run(SAY))
    assert result.finish_reason == finish
    assert result.metadata.get("provider_finish_reason", ending) == ending
    assert not result.validation.valid
    assert result.validation.issues[0].keyword == keyword
