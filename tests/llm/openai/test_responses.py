"""The openai adapter on the Responses API (``options.api``), end to end through the real
``openai`` SDK against FakeOpenAIServer: the body on the wire, every ending, usage, reasoning
summaries, streams, token counting, provider batches, and how ``auto`` chooses."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scriptorium import Engine
from scriptorium._testing.http import Answer, sse
from scriptorium._testing.openai_server import FakeOpenAIServer
from scriptorium.cli import main
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.batches.port import Entry
from scriptorium.llm.client import ReasoningChunk
from scriptorium.llm.model import (
    CacheDirectives,
    LLMRequest,
    LLMResponse,
    StructuredOutput,
    Target,
    Uncounted,
)
from scriptorium.llm.openai.apis import chosen_api, responses_only
from scriptorium.llm.openai.batches import OpenAIBatches
from scriptorium.llm.openai.call import CHAT_USAGE, RESPONSES_USAGE, token_usage
from scriptorium.llm.openai.client import OpenAIClient
from scriptorium.llm.openai.responses_call import read_response
from scriptorium.llm.openai.spec import SPEC
from scriptorium.llm.retry import RetryHooks
from scriptorium.llm.streaming import ErrorEvent
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import MediaPart, Message, TextPart

KEY = "sk-responses-canary-5c1e77d0"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string"}},
}
RESPONSES = {"api": "responses"}
HOOKS = RetryHooks(sleep=lambda _s: None, jitter=lambda _lo, _hi: 1.0)
PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84"
    b"\x00\x00\x00\x00IEND\xaeB`\x82"
)


@pytest.fixture
def client() -> Iterator[OpenAIClient]:
    with OpenAIClient(hooks=HOOKS) as adapter:
        yield adapter


def _request(server: FakeOpenAIServer, **fields: Any) -> LLMRequest:
    base: dict[str, Any] = {
        "target": Target(provider="openai", model="gpt-5-mini", endpoint=server.url),
        "api_key": KEY,
        "system": "You extract contacts.",
        "messages": (
            Message(role="user", content="Ada Lovelace"),
            Message(role="assistant", content="Noted."),
            Message(role="user", content="Now the contact."),
        ),
        "settings": ExecutionSettings(max_tokens=200, max_retries=0),
        "options": dict(RESPONSES),
    }
    base.update(fields)
    return LLMRequest(**base)


def _body(server: FakeOpenAIServer) -> dict[str, Any]:
    body = server.requests[-1].body
    assert isinstance(body, dict)
    return body


# --- the body on the wire -----------------------------------------------------------------------


def test_the_body_is_the_responses_apis(server: FakeOpenAIServer, client: OpenAIClient) -> None:
    """System text is instructions, messages are input, the output budget is
    max_output_tokens, and nothing is stored on OpenAI's side."""
    server.reply("hi")
    settings = ExecutionSettings(max_tokens=200, temperature=0.2, max_retries=0)
    response = client.generate(_request(server, settings=settings))
    assert response.text == "hi"
    assert server.requests[-1].path == "/v1/responses"
    body = _body(server)
    assert body["instructions"] == "You extract contacts."
    assert body["input"] == [
        {"role": "user", "content": "Ada Lovelace"},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Now the contact."},
    ]
    assert body["max_output_tokens"] == 200
    assert body["store"] is False
    assert body["temperature"] == 0.2
    assert "messages" not in body
    assert "max_tokens" not in body
    assert response.metadata["api"] == "responses"


def test_stop_sequences_are_not_sent_and_said_ignored(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    server.reply("hi")
    settings = ExecutionSettings(stop_sequences=("END",), max_retries=0)
    response = client.generate(_request(server, settings=settings))
    assert "stop" not in _body(server)
    assert response.metadata["ignored_settings"] == ["stop_sequences"]


def test_a_schema_is_text_format_strict_when_it_reduces(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    server.reply('{"name": "Ada"}')
    structured = StructuredOutput(schema_=SCHEMA, name="contact", strategy="native")
    response = client.generate(_request(server, structured_output=structured))
    form = _body(server)["text"]["format"]
    assert form["type"] == "json_schema"
    assert form["name"] == "contact"
    assert form["strict"] is True
    assert form["schema"]["additionalProperties"] is False
    assert response.text == '{"name": "Ada"}'
    assert response.metadata["strategy"] == "native"


def test_json_mode_is_json_object(server: FakeOpenAIServer, client: OpenAIClient) -> None:
    server.reply("{}")
    structured = StructuredOutput(format="json")
    client.generate(_request(server, structured_output=structured))
    body = _body(server)
    assert body["text"] == {"format": {"type": "json_object"}}
    assert "JSON" in body["instructions"]


def test_the_tool_strategy_forces_one_flat_function(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    server.reply_tool('{"name": "Ada"}')
    structured = StructuredOutput(schema_=SCHEMA, name="contact", strategy="tool")
    response = client.generate(_request(server, structured_output=structured))
    body = _body(server)
    assert body["tool_choice"] == {"type": "function", "name": "contact"}
    assert server.requests[-1].path == "/v1/responses"
    assert body["tools"][0]["name"] == "contact"
    assert body["tools"][0]["strict"] is True
    assert response.text == '{"name": "Ada"}'
    assert response.finish_reason == "stop"


def test_the_prompt_strategy_puts_the_schema_in_the_instructions(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    server.reply('{"name": "Ada"}')
    structured = StructuredOutput(schema_=SCHEMA, strategy="prompt")
    client.generate(_request(server, structured_output=structured))
    body = _body(server)
    assert "text" not in body
    assert "tools" not in body
    assert '"required": ["name"]' in body["instructions"]


def test_reasoning_is_an_effort_with_a_summary(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    server.reply("42", reasoning="Six times seven.", reasoning_tokens=30, completion_tokens=40)
    settings = ExecutionSettings(reasoning="high", max_retries=0)
    response = client.generate(_request(server, settings=settings))
    assert _body(server)["reasoning"] == {"effort": "high", "summary": "auto"}
    assert "reasoning_effort" not in _body(server)
    assert response.reasoning == "Six times seven."
    assert response.text == "42"
    assert response.usage.reasoning_tokens == 30


def test_the_prompt_cache_key_is_sent_as_on_chat(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    server.reply("hi")
    target = Target(provider="openai", model="gpt-5-mini")  # OpenAI's own endpoint takes it
    request = _request(server, target=target, cache=CacheDirectives(mode="auto", key="abc123"))
    from scriptorium.llm.openai.responses_body import build_responses_params

    params, _ = build_responses_params(request)
    assert params["prompt_cache_key"] == "abc123"


def test_media_are_input_images_and_files(server: FakeOpenAIServer, client: OpenAIClient) -> None:
    server.reply("a pixel")
    image = MediaPart(name="dot", media_type="image/png", sha256="a" * 64, size=len(PNG))
    pdf = MediaPart(name="doc.pdf", media_type="application/pdf", sha256="b" * 64, size=13)
    message = Message(role="user", content=(TextPart(text="What is this?"), image, pdf))
    media = {"a" * 64: PNG, "b" * 64: b"%PDF-1.4 fake"}
    client.generate(_request(server, messages=(message,), media=media))
    parts = _body(server)["input"][0]["content"]
    assert parts[0] == {"type": "input_text", "text": "What is this?"}
    assert parts[1]["type"] == "input_image"
    assert parts[1]["image_url"].startswith("data:image/png;base64,")
    assert parts[2]["type"] == "input_file"
    assert parts[2]["filename"] == "doc.pdf"
    assert parts[2]["file_data"].startswith("data:application/pdf;base64,")


# --- endings and usage --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("finish", "expected"),
    [("stop", "stop"), ("length", "length"), ("content_filter", "refusal")],
)
def test_endings(
    server: FakeOpenAIServer, client: OpenAIClient, finish: str, expected: str
) -> None:
    """completed is stop; incomplete for max_output_tokens is length, for content_filter a
    refusal."""
    server.reply("partial", finish_reason=finish)
    response = client.generate(_request(server))
    assert response.finish_reason == expected
    assert response.text == "partial"


def test_a_refusal_item_is_a_refusal(server: FakeOpenAIServer, client: OpenAIClient) -> None:
    server.reply(None, refusal="I can't help with that.")
    response = client.generate(_request(server))
    assert response.finish_reason == "refusal"
    assert response.text == "I can't help with that."
    assert response.metadata["refusal"] == "I can't help with that."


def test_a_failed_response_is_a_failure_not_an_answer(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    error = {"code": "server_error", "message": "the model broke"}
    server.reply_json(
        {"id": "resp_1", "object": "response", "status": "failed", "output": [], "error": error}
    )
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(_request(server))
    assert caught.value.reason == "server_error"


def test_a_body_that_is_no_response_is_invalid(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    server.reply_json({"choices": []})
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(_request(server))
    assert caught.value.reason == "invalid_response"


def test_usage_splits_into_the_same_classes_and_cost_as_on_chat(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """Cached tokens leave the input count and reasoning tokens stay inside the output, on both
    APIs, so a request costs the same whichever it travels on."""
    for _ in range(2):
        server.reply(
            "a",
            prompt_tokens=1000,
            completion_tokens=500,
            cached_tokens=200,
            reasoning_tokens=100,
        )
    on_responses = client.generate(_request(server))
    on_chat = client.generate(_request(server, options={"api": "chat"}))
    assert server.requests[-1].path == "/v1/chat/completions"
    usage = on_responses.usage
    assert (usage.input_tokens, usage.cache_read_input_tokens) == (800, 200)
    assert (usage.output_tokens, usage.reasoning_tokens) == (500, 100)
    assert usage == on_chat.usage
    assert usage.cost_micro > 0


# --- streams ------------------------------------------------------------------------------------


def test_a_stream_reads_text_and_summary_deltas(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    server.reply("hello there", reasoning="thinking hard", chunks=4)
    items = list(client.stream(_request(server)))
    response = items[-1]
    assert isinstance(response, LLMResponse)
    thoughts = [i for i in items if isinstance(i, ReasoningChunk)]
    texts = [i for i in items[:-1] if isinstance(i, str) and not isinstance(i, ReasoningChunk)]
    assert "".join(thoughts) == "thinking hard"
    assert "".join(texts) == "hello there"
    assert response.text == "hello there"
    assert response.reasoning == "thinking hard"
    assert _body(server)["stream"] is True


def test_a_stream_ending_incomplete_is_a_length_answer(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    server.reply("cut sh", finish_reason="length", chunks=3)
    response = list(client.stream(_request(server)))[-1]
    assert isinstance(response, LLMResponse)
    assert response.finish_reason == "length"
    assert response.text == "cut sh"


def test_a_stream_without_its_ending_event_is_cut_off(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """Only response.completed, response.incomplete or response.failed end a stream."""
    created = sse("response.created", {"type": "response.created", "response": {}})
    delta = {"type": "response.output_text.delta", "delta": "Partial"}
    done = {"type": "response.output_text.done", "text": "Partial"}
    parts = (
        (0.0, created),
        (0.0, sse(delta["type"], delta)),
        (0.0, sse(done["type"], done)),
    )
    server.push(lambda _r: Answer(parts=parts, content_type="text/event-stream"))
    with pytest.raises(LLMGenerateError) as caught:
        list(client.stream(_request(server)))
    assert caught.value.reason == "connection"
    assert caught.value.partial_text == "Partial"


def test_a_failed_stream_is_the_servers_failure(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    delta = {"type": "response.output_text.delta", "delta": "Half"}
    failed = {
        "type": "response.failed",
        "response": {"status": "failed", "error": {"code": "server_error", "message": "boom"}},
    }
    parts = (
        (0.0, sse("response.output_text.delta", delta)),
        (0.0, sse("response.failed", failed)),
    )
    server.push(lambda _r: Answer(parts=parts, content_type="text/event-stream"))
    with pytest.raises(LLMGenerateError) as caught:
        list(client.stream(_request(server)))
    assert caught.value.reason == "server_error"
    assert caught.value.partial_text == "Half"


def test_a_tool_strategy_stream_reads_argument_deltas(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    server.reply_tool('{"name": "Ada"}')
    structured = StructuredOutput(schema_=SCHEMA, name="contact", strategy="tool")
    items = list(client.stream(_request(server, structured_output=structured)))
    assert "".join(i for i in items[:-1] if isinstance(i, str)) == '{"name": "Ada"}'
    response = items[-1]
    assert isinstance(response, LLMResponse)
    assert response.text == '{"name": "Ada"}'


def test_async_generate_and_stream(server: FakeOpenAIServer) -> None:
    server.reply("async one")
    server.reply("async two", chunks=3)

    async def both() -> tuple[LLMResponse, list[Any]]:
        async with OpenAIClient(hooks=HOOKS) as adapter:
            first = await adapter.agenerate(_request(server))
            items = [item async for item in adapter.astream(_request(server))]
            return first, items

    first, items = asyncio.run(both())
    assert first.text == "async one"
    last = items[-1]
    assert isinstance(last, LLMResponse)
    assert last.text == "async two"
    assert all(r.path == "/v1/responses" for r in server.requests)


# --- counting, verify, batches ------------------------------------------------------------------


def test_count_tokens_uses_the_input_token_count(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    server.count_tokens = 321
    assert client.count_tokens(_request(server)) == 321
    sent = server.requests[-1]
    assert sent.path == "/v1/responses/input_tokens"
    assert isinstance(sent.body, dict)
    assert sent.body["instructions"] == "You extract contacts."
    assert "store" not in sent.body
    assert "max_output_tokens" not in sent.body


def test_a_server_without_the_count_route_is_estimated_saying_why(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    server.count_tokens_status = 404
    counted = client.count_tokens(_request(server, options={"api": "chat"}))
    assert isinstance(counted, Uncounted)
    assert "/responses/input_tokens answered HTTP 404" in counted.reason
    assert len(server.requests) == 1  # not retried


def test_verify_travels_on_the_responses_api(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    server.reply("OK")
    target = Target(provider="openai", model="gpt-5-mini", endpoint=server.url)
    assert client.verify(target, KEY, options=RESPONSES).text == "OK"
    assert server.requests[-1].path == "/v1/responses"
    assert _body(server)["max_output_tokens"] == 16


def test_a_provider_batch_goes_to_v1_responses(server: FakeOpenAIServer) -> None:
    request = _request(server)
    batches = OpenAIBatches(key=KEY, base_url=server.url, hooks=HOOKS, model="gpt-5-mini")
    entries: list[Entry] = [batches.entry("a" * 64, request)]
    assert entries[0].data["url"] == "/v1/responses"
    assert entries[0].data["body"]["store"] is False
    server.batches.text = lambda _custom_id, _body: "from the batch"
    remote = batches.create(entries, "tag1")
    assert server.batches.created[-1].extra["endpoint"] == "/v1/responses"
    while not batches.retrieve(remote.id).ended:
        pass
    (row,) = batches.results(remote.id)
    response = batches.response(request, row)
    assert response.text == "from the batch"
    assert response.metadata["service_tier"] == "batch"
    assert response.metadata["api"] == "responses"


# --- which API ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "only"),
    [
        ("gpt-5-pro", True),
        ("o3-pro-2025-06-10", True),
        ("gpt-5.1-codex-max", True),
        ("gpt-5-codex", True),
        ("o3-deep-research", True),
        ("o4-mini-deep-research-2025-06-26", True),
        ("gpt-5", False),
        ("gpt-4o", False),
        ("o3", False),
    ],
)
def test_the_responses_only_table(model: str, only: bool) -> None:
    assert responses_only(model) is only


def test_auto_chooses_by_model_on_openais_endpoint_and_chat_on_a_server() -> None:
    assert chosen_api("gpt-5-pro", {}, None) == "responses"
    assert chosen_api("gpt-5", {}, None) == "chat"
    assert chosen_api("gpt-5-pro", {}, "https://api.openai.com/v1", "profile") == "responses"
    # A compatible server named by the profile's endpoint speaks Chat Completions.
    assert chosen_api("gpt-5-pro", {}, "http://127.0.0.1:8000/v1", "profile") == "chat"
    # A base URL from OPENAI_BASE_URL is not the profile's endpoint: the model decides.
    assert chosen_api("gpt-5-pro", {}, "http://gw.example/v1", "env") == "responses"
    # Explicit choices win everywhere.
    assert chosen_api("gpt-4o", {"api": "responses"}, "http://127.0.0.1:8000/v1") == "responses"
    assert chosen_api("gpt-5-pro", {"api": "chat"}, None) == "chat"
    azure = {"platform": "azure", "api_version": "v1", "base_model": "gpt-5-codex"}
    assert chosen_api("my-deployment", azure, "https://r.openai.azure.com") == "responses"


def test_an_unknown_api_is_refused(server: FakeOpenAIServer, client: OpenAIClient) -> None:
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(_request(server, options={"api": "respones"}))
    assert caught.value.reason == "config"
    assert "did you mean 'responses'" in caught.value.message
    assert server.requests == []


# --- through the engine: prepare, hashes, runs --------------------------------------------------


def _project(root: Path, url: str) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "greet.prompt.md").write_text(
        "---\nprofile: chat\noutput: {format: json_schema, schema: {type: object, "
        "required: [name], properties: {name: {type: string}}}}\n---\nName {{ who }}.\n"
    )
    common = f"provider: openai\nmodel: gpt-5-mini\nendpoint: {url}\napi_key_env: OAI_KEY\n"
    (root / "profiles" / "chat.yaml").write_text(common)
    (root / "profiles" / "resp.yaml").write_text(common + "options: {api: responses}\n")
    return root


def test_prepare_shows_the_api_and_the_request_hash_ignores_it(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    engine = Engine(_project(tmp_path, server.url), env={"OAI_KEY": KEY})
    on_chat = engine.prepare("greet", profile="chat", inputs={"who": "Ada"})
    on_responses = engine.prepare("greet", profile="resp", inputs={"who": "Ada"})
    assert (on_chat.api, on_responses.api) == ("chat", "responses")
    assert on_chat.request_hash == on_responses.request_hash
    assert on_chat.rendered_prompt_hash == on_responses.rendered_prompt_hash


def test_a_run_on_the_responses_api_validates_its_output(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    engine = Engine(_project(tmp_path, server.url), env={"OAI_KEY": KEY})
    server.reply(json.dumps({"name": "Ada"}))
    result = engine.run("greet", profile="resp", inputs={"who": "Ada"})
    assert result.validation.valid
    assert json.loads(result.output.text) == {"name": "Ada"}
    assert server.requests[-1].path == "/v1/responses"
    assert KEY not in result.model_dump_json()


# --- properties ---------------------------------------------------------------------------------

_counts = st.integers(min_value=0, max_value=10**9)


@given(prompt=_counts, cached=_counts, completion=_counts, reasoned=_counts)
def test_both_apis_split_usage_by_one_rule(
    prompt: int, cached: int, completion: int, reasoned: int
) -> None:
    chat = {
        "prompt_tokens": prompt,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens": completion,
        "completion_tokens_details": {"reasoning_tokens": reasoned},
    }
    responses = {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoned},
    }
    usage = token_usage(responses, RESPONSES_USAGE)
    assert usage == token_usage(chat, CHAT_USAGE)
    assert usage.input_tokens + usage.cache_read_input_tokens == prompt
    assert usage.reasoning_tokens <= usage.output_tokens


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
_items = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["message", "reasoning", "function_call", "other"])},
        optional={"content": _json, "summary": _json, "arguments": _json},
    ),
    max_size=4,
)


@given(
    items=_items,
    status=st.sampled_from(["completed", "incomplete", "failed", "queued", None]),
    usage=_json,
)
def test_any_response_body_is_read_or_refused_cleanly(items: Any, status: Any, usage: Any) -> None:
    """Whatever a server puts in a response object, reading it gives an answer or one of the
    two failures (an invalid response, the server's failure), never another exception."""
    body = {"output": items, "status": status, "usage": usage}
    try:
        (text, finish, _, _), _ = read_response(json.dumps(body).encode(), "tool")
    except (LLMGenerateError, ErrorEvent):
        return
    assert isinstance(text, str)
    assert isinstance(finish, str)


def test_the_cli_prepare_shows_the_api(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    server: FakeOpenAIServer,
) -> None:
    monkeypatch.chdir(_project(tmp_path, server.url))
    monkeypatch.setenv("OAI_KEY", KEY)
    assert main(["prepare", "greet", "-p", "resp", "-i", "who=Ada"]) == 0
    assert "\napi        responses\n" in capsys.readouterr().out
    assert main(["prepare", "greet", "-p", "resp", "-i", "who=Ada", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["api"] == "responses"


def test_prepare_shows_the_reasoning_as_the_responses_api_takes_it(
    server: FakeOpenAIServer,
) -> None:
    settings = ExecutionSettings(reasoning="high", reasoning_budget_tokens=2000)
    view = SPEC.wire_view(_request(server, settings=settings))
    assert view.api == "responses"
    assert view.reasoning is not None
    assert view.reasoning.sent == {"reasoning": {"effort": "high", "summary": "auto"}}
    assert "reasoning.effort level" in view.reasoning.ignored["reasoning_budget_tokens"]
    assert "reasoning_budget_tokens" in view.ignored_settings
    chat = SPEC.wire_view(_request(server, settings=settings, options={"api": "chat"}))
    assert chat.api == "chat"
    assert chat.reasoning is not None
    assert chat.reasoning.sent == {"reasoning_effort": "high"}
