"""The Anthropic adapter end to end: the real ``anthropic`` SDK against FakeAnthropicServer on
127.0.0.1. Backoff sleeps go through injected hooks (recorded, not slept), so the suite stays fast;
only per-attempt timeouts use real time, kept to a fraction of a second."""

from __future__ import annotations

import asyncio
import pickle
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.anthropic.body import build_body
from scriptorium.llm.anthropic.client import AnthropicClient, SDKFactory
from scriptorium.llm.model import LLMRequest, LLMResponse, StructuredOutput, Target
from scriptorium.llm.retry import RetryHooks, RetryInfo
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message

CANARY = "sk-ant-canary-3f9a7c1e5d2b4a6f8e0c"
MODEL = "claude-sonnet-4-6"
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0},
    },
    "required": ["name", "age"],
}


class Sleeps:
    """Records backoff sleeps instead of sleeping."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.seconds.append(seconds)

    async def asleep(self, seconds: float) -> None:
        self.seconds.append(seconds)

    @property
    def total(self) -> float:
        return round(sum(self.seconds), 6)


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(default_text=None) as fake:
        yield fake


@pytest.fixture
def server(shared_server: FakeAnthropicServer) -> FakeAnthropicServer:
    """One server for the module (starting one per test is wasted time), reset per test."""
    shared_server.reset()
    return shared_server


@pytest.fixture(scope="module")
def shared_sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def sleeps(shared_sleeps: Sleeps) -> Sleeps:
    shared_sleeps.seconds.clear()
    return shared_sleeps


def make_client(sleeps: Sleeps, **hooks: Any) -> AnthropicClient:
    return AnthropicClient(
        hooks=RetryHooks(
            sleep=sleeps.sleep, asleep=sleeps.asleep, jitter=lambda low, high: 1.0, **hooks
        )
    )


@pytest.fixture(scope="module")
def client(shared_sleeps: Sleeps) -> Iterator[AnthropicClient]:
    """One adapter for the module, so its SDK client (and connection pool) is reused as in use."""
    with make_client(shared_sleeps) as built:
        yield built


def run_async(client: AnthropicClient, request: LLMRequest) -> LLMResponse:
    """One ``agenerate`` in a fresh event loop, closing that loop's SDK clients after."""

    async def once() -> LLMResponse:
        async with client:
            return await client.agenerate(request)

    return asyncio.run(once())


def make_request(
    server_url: str,
    *,
    model: str = MODEL,
    structured: StructuredOutput | None = None,
    **fields: Any,
) -> LLMRequest:
    base: dict[str, Any] = {
        "target": Target(provider="anthropic", model=model, endpoint=server_url),
        "api_key": CANARY,
        "messages": (Message(role="user", content="Hello"),),
        "structured_output": structured,
    }
    base.update(fields)
    return LLMRequest(**base)


def failure(client: AnthropicClient, request: LLMRequest) -> LLMGenerateError:
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(request)
    return caught.value


def assert_no_canary(err: BaseException) -> None:
    for text in (str(err), repr(err), pickle.dumps(err).decode("latin-1")):
        assert CANARY not in text


# --- success, mapping, cost --------------------------------------------------------------------


def test_success_maps_text_usage_cost_request_id_and_attempts(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    usage = {
        "input_tokens": 1000,
        "output_tokens": 100,
        "cache_creation_input_tokens": 200,
        "cache_read_input_tokens": 1000,
    }
    server.reply("Hi there", usage=usage)
    response = client.generate(make_request(server.url))
    assert response.text == "Hi there"
    assert (response.finish_reason, response.model, response.attempts) == ("stop", MODEL, 1)
    assert response.usage.model_dump() == {
        **usage,
        "cache_write_1h_input_tokens": 0,
        "cost_micro": 5550,
        "llm_calls": 1,
    }
    assert response.metadata["request_id"].startswith("req_fake_")
    assert response.latency_ms > 0


def test_system_prompt_roles_and_settings_reach_the_api_as_given(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.reply()
    messages = (
        Message(role="user", content="one"),
        Message(role="assistant", content="two"),
        Message(role="user", content="three"),
    )
    settings = ExecutionSettings(max_tokens=77, stop_sequences=("END",))
    client.generate(
        make_request(
            server.url, system="Be brief.", messages=messages, settings=settings, session_id="s-1"
        )
    )
    body = server.requests[-1].body
    assert body["system"] == "Be brief."
    assert body["messages"] == [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": "three"},
    ]
    assert (body["max_tokens"], body["stop_sequences"]) == (77, ["END"])
    assert "metadata" not in body  # session ids are not end-user ids


def test_sampling_settings_are_left_out_and_reported(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    """API version 2026-10-21 rejects temperature/top_p/top_k at any value."""
    server.reply()
    settings = ExecutionSettings(temperature=0.2, top_k=5)
    response = client.generate(make_request(server.url, settings=settings))
    body = server.requests[-1].body
    assert not {"temperature", "top_p", "top_k"} & set(body)
    assert response.metadata["ignored_settings"] == ["temperature", "top_k"]


def test_unset_settings_and_system_are_not_sent(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.reply()
    client.generate(make_request(server.url))
    body = server.requests[-1].body
    assert set(body) == {"model", "max_tokens", "messages"}


def test_the_key_is_sent_and_the_sdk_retries_are_off(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.reply()
    client.generate(make_request(server.url))
    headers = server.requests[-1].headers
    assert CANARY in headers.get("x-api-key", "") + headers.get("authorization", "")
    assert headers["x-stainless-retry-count"] == "0"


def test_the_posted_body_is_build_body_and_the_sdk_headers_stay(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    """The prebuilt body goes out as it is, with the SDK's version, auth and content headers."""
    server.reply('{"name": "Ada", "age": 36}')
    request = make_request(
        server.url,
        system="Be brief.",
        structured=StructuredOutput(schema_=PERSON, strategy="native"),
        settings=ExecutionSettings(max_tokens=99, stop_sequences=("END",)),
    )
    client.generate(request)
    sent = server.requests[-1]
    assert sent.body == build_body(request).body
    assert sent.path == "/v1/messages"
    assert sent.headers["anthropic-version"]
    assert sent.headers["content-type"] == "application/json"
    assert CANARY in sent.headers.get("x-api-key", "") + sent.headers.get("authorization", "")


@pytest.mark.parametrize("suffix", ["/proxy", "/proxy/"])
def test_an_endpoint_with_a_path_prefix_keeps_it(
    server: FakeAnthropicServer, client: AnthropicClient, suffix: str
) -> None:
    """A proxy mounted under a path gets the Messages API under that path, as with the SDK."""
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server.url + suffix))
    # The fake serves nothing under /proxy: its 404 names the path the SDK was sent to.
    assert caught.value.reason == "not_found"
    assert "/proxy/v1/messages" in str(caught.value)


def test_a_wrapped_sdk_client_without_base_url_or_weakrefs_still_posts(
    server: FakeAnthropicServer, sleeps: Sleeps
) -> None:
    """An sdk_factory may hand back a wrapper: it gets the path and resolves it itself."""
    import anthropic

    class Slotted:
        __slots__ = ("inner",)

        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def post(self, *args: Any, **kwargs: Any) -> Any:
            return self.inner.post(*args, **kwargs)

        def close(self) -> None:
            self.inner.close()

    def factory(is_async: bool, api_key: str, base_url: str) -> Any:
        return Slotted(anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0))

    server.reply("wrapped")
    with AnthropicClient(sdk_factory=factory) as client:
        assert client.generate(make_request(server.url)).text == "wrapped"
    assert server.requests[-1].path == "/v1/messages"


def test_headers_from_the_sdk_environment_variables_are_not_sent(
    server: FakeAnthropicServer, sleeps: Sleeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "Authorization: Bearer stolen\nx-injected: yes")
    server.reply()
    with make_client(sleeps) as client:
        client.generate(make_request(server.url))
    headers = server.requests[-1].headers
    assert "x-injected" not in headers
    assert "stolen" not in repr(headers)
    # The key goes as the SDK release sends it: x-api-key, or (newer releases) a bearer token.
    sent = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
    assert sent == CANARY


def test_profile_pricing_overrides_the_table(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.reply(usage={"input_tokens": 10**6, "output_tokens": 0})
    response = client.generate(make_request(server.url, pricing={"input": 1.0, "output": 2.0}))
    assert response.usage.cost_micro == 1_000_000


def test_an_unknown_model_costs_zero_with_a_note(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.reply(usage={"input_tokens": 500, "output_tokens": 5}, model="claude-nova-9")
    response = client.generate(make_request(server.url, model="claude-nova-9"))
    assert response.usage.cost_micro == 0
    assert "claude-nova-9" in response.metadata["pricing"]


def test_an_alias_is_priced_by_the_snapshot_the_api_reports(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.reply(
        usage={"input_tokens": 10**6, "output_tokens": 0}, model="claude-haiku-4-5-20251001"
    )
    response = client.generate(make_request(server.url, model="claude-haiku-fast"))
    assert response.model == "claude-haiku-4-5-20251001"
    assert response.usage.cost_micro == 1_000_000
    assert "pricing" not in response.metadata


@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("refusal", "refusal"),
        ("tool_use", "tool_use"),
        ("pause_turn", "pause_turn"),
    ],
)
def test_stop_reasons_map_to_finish_reasons(
    server: FakeAnthropicServer, client: AnthropicClient, stop_reason: str, finish: str
) -> None:
    server.reply("partial", stop_reason=stop_reason)
    response = client.generate(make_request(server.url))
    assert response.finish_reason == finish
    if finish != stop_reason:
        assert response.metadata["provider_finish_reason"] == stop_reason


# --- structured output strategies ---------------------------------------------------------------


def test_native_sends_the_reduced_schema_in_output_config(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.reply('{"name": "Ada", "age": 36}')
    spec = StructuredOutput(schema_=PERSON, strategy="native")
    response = client.generate(make_request(server.url, structured=spec))
    fmt = server.requests[-1].body["output_config"]["format"]
    assert fmt == {
        "type": "json_schema",
        "schema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name", "age"],
            "additionalProperties": False,
        },
    }
    assert response.text == '{"name": "Ada", "age": 36}'
    assert response.metadata["strategy"] == "native"
    assert response.metadata["schema_dropped"] == ["minLength", "minimum"]


def test_tool_forces_one_tool_and_returns_its_input_as_json(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.reply_tool({"name": "Ada", "age": 36})
    spec = StructuredOutput(schema_=PERSON, strategy="tool", name="person record")
    response = client.generate(make_request(server.url, structured=spec))
    body = server.requests[-1].body
    assert body["tools"][0]["name"] == "person_record"
    assert body["tools"][0]["input_schema"] == PERSON  # the full schema: tools accept it
    assert body["tool_choice"] == {"type": "tool", "name": "person_record"}
    assert response.text == '{"name": "Ada", "age": 36}'
    assert (response.finish_reason, response.metadata["strategy"]) == ("stop", "tool")


def test_tool_wraps_a_non_object_schema_and_unwraps_the_answer(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.reply_tool({"value": [1, 2]})
    spec = StructuredOutput(
        schema_={"type": "array", "items": {"type": "integer"}}, strategy="tool"
    )
    response = client.generate(make_request(server.url, structured=spec))
    schema = server.requests[-1].body["tools"][0]["input_schema"]
    assert schema["properties"]["value"] == {"type": "array", "items": {"type": "integer"}}
    assert response.text == "[1, 2]"


def test_prompt_appends_schema_instructions_to_the_system_prompt(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.reply('{"name": "Ada", "age": 36}')
    spec = StructuredOutput(schema_=PERSON, strategy="prompt")
    response = client.generate(make_request(server.url, system="Extract.", structured=spec))
    body = server.requests[-1].body
    assert body["system"].startswith("Extract.\n\n")
    assert '"minimum": 0' in body["system"]
    assert "tools" not in body
    assert "output_config" not in body
    assert response.metadata["strategy"] == "prompt"


def test_plain_json_without_a_schema_is_asked_for_in_the_prompt(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.reply("[]")
    spec = StructuredOutput(format="json", strategy="native")
    response = client.generate(make_request(server.url, structured=spec))
    assert "JSON" in server.requests[-1].body["system"]
    assert response.metadata["strategy"] == "prompt"


@pytest.mark.parametrize(
    ("model", "strategy"),
    [
        ("claude-sonnet-4-6", "native"),
        ("claude-opus-4-1-20250805", "native"),
        ("claude-haiku-4-5", "native"),
        ("claude-sonnet-4-20250514", "tool"),
        ("claude-3-5-haiku-latest", "tool"),
        ("some-proxy-model", "tool"),
    ],
)
def test_auto_uses_native_where_the_model_supports_it_else_tool(
    server: FakeAnthropicServer, client: AnthropicClient, model: str, strategy: str
) -> None:
    if strategy == "tool":
        server.reply_tool({"name": "Ada", "age": 1})
    else:
        server.reply('{"name": "Ada", "age": 1}')
    spec = StructuredOutput(schema_=PERSON, strategy="auto")
    response = client.generate(make_request(server.url, model=model, structured=spec))
    assert response.metadata["strategy"] == strategy


def test_auto_avoids_native_when_reducing_would_forbid_valid_output(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.reply_tool({"tags": {"a": "b"}})
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}},
    }
    spec = StructuredOutput(schema_=schema, strategy="auto")
    response = client.generate(make_request(server.url, structured=spec))
    assert response.metadata["strategy"] == "tool"


# --- retries, through the real SDK ---------------------------------------------------------------


def test_429_with_retry_after_then_success_counts_two_attempts_and_the_successful_tokens(
    server: FakeAnthropicServer, client: AnthropicClient, sleeps: Sleeps
) -> None:
    server.fail(429, headers={"retry-after": "2"})
    server.reply("ok", usage={"input_tokens": 7, "output_tokens": 3})
    response = client.generate(make_request(server.url))
    assert response.attempts == 2
    assert (response.usage.input_tokens, response.usage.output_tokens) == (7, 3)
    assert response.usage.llm_calls == 2
    assert sleeps.total == 2.0


def test_retry_after_ms_beats_retry_after(
    server: FakeAnthropicServer, client: AnthropicClient, sleeps: Sleeps
) -> None:
    server.fail(429, headers={"retry-after-ms": "3000", "retry-after": "1"})
    server.reply()
    client.generate(make_request(server.url))
    assert sleeps.total == 3.0


def test_an_hour_long_retry_after_fails_fast_as_retryable(
    server: FakeAnthropicServer, client: AnthropicClient, sleeps: Sleeps
) -> None:
    server.fail(429, headers={"retry-after": "3600"})
    err = failure(client, make_request(server.url))
    assert (err.reason, err.retryable, err.retry_after_s, err.attempts) == (
        "rate_limited",
        True,
        3600.0,
        1,
    )
    assert sleeps.seconds == []


@pytest.mark.parametrize("value", ["soon", "-3", "Thu, 99 Foo 2026 00:00:00 GMT", "nan"])
def test_garbage_retry_after_falls_back_to_the_backoff(
    server: FakeAnthropicServer, client: AnthropicClient, sleeps: Sleeps, value: str
) -> None:
    server.fail(429, headers={"retry-after": value})
    server.reply()
    assert client.generate(make_request(server.url)).attempts == 2
    assert sleeps.total == 1.5


def test_529_is_retried_until_the_limit(
    server: FakeAnthropicServer, client: AnthropicClient, sleeps: Sleeps
) -> None:
    for _ in range(3):
        server.fail(529)
    err = failure(client, make_request(server.url))
    assert (err.reason, err.retryable, err.http_status, err.attempts) == (
        "overloaded",
        True,
        529,
        3,
    )
    assert len(server.requests) == 3
    assert sleeps.total == 1.5 + 3.0


def test_500_with_x_should_retry_false_is_not_retried(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.fail(500, headers={"x-should-retry": "false"})
    err = failure(client, make_request(server.url))
    assert (err.reason, err.retryable, err.attempts) == ("server_error", False, 1)


@pytest.mark.parametrize(
    ("status", "reason"),
    [(400, "invalid_request"), (401, "auth"), (403, "permission"), (404, "not_found")],
)
def test_client_errors_are_not_retried(
    server: FakeAnthropicServer, client: AnthropicClient, status: int, reason: str
) -> None:
    server.fail(status)
    server.reply("never")
    err = failure(client, make_request(server.url))
    assert (err.reason, err.retryable, err.http_status, err.attempts) == (
        reason,
        False,
        status,
        1,
    )
    assert server.pending == 1


def test_a_spend_limit_429_is_quota_and_not_retried(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.fail(
        429,
        error_type="rate_limit_error",
        message="You have reached your specified API usage spend limit.",
    )
    err = failure(client, make_request(server.url))
    assert (err.reason, err.retryable, err.attempts) == ("quota", False, 1)


def test_an_over_long_prompt_is_context_window(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.fail(400, message="prompt is too long: 210000 tokens > 200000 maximum")
    assert failure(client, make_request(server.url)).reason == "context_window"


def test_connection_refused_is_retried_then_reported_as_connection(
    client: AnthropicClient, sleeps: Sleeps
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    err = failure(client, make_request(f"http://127.0.0.1:{port}"))
    assert (err.reason, err.retryable, err.attempts) == ("connection", True, 3)
    assert_no_canary(err)


def test_a_connection_reset_is_retried(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.reset_connection()
    server.reply("after the reset")
    response = client.generate(make_request(server.url))
    assert (response.text, response.attempts) == ("after the reset", 2)


def test_resets_until_the_limit_are_a_connection_failure(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    for _ in range(3):
        server.reset_connection()
    err = failure(client, make_request(server.url))
    assert (err.reason, err.attempts) == ("connection", 3)


def test_a_slow_response_hits_the_per_attempt_timeout_taken_from_the_budget(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.delay(1.0)
    settings = ExecutionSettings(timeout_s=0.3)
    err = failure(client, make_request(server.url, settings=settings))
    assert (err.reason, err.retryable, err.attempts) == ("timeout", True, 1)
    assert err.elapsed_s is not None
    assert err.elapsed_s < 0.9
    assert float(server.requests[-1].headers["x-stainless-read-timeout"]) <= 0.3


def test_the_budget_ending_during_a_backoff_fails_without_sleeping(
    server: FakeAnthropicServer, client: AnthropicClient, sleeps: Sleeps
) -> None:
    server.fail(529)
    server.reply("too late")
    err = failure(client, make_request(server.url, settings=ExecutionSettings(timeout_s=1.0)))
    assert (err.reason, err.retryable, err.attempts) == ("overloaded", True, 1)
    assert "budget" in str(err)
    assert sleeps.seconds == []


def test_stop_requested_before_the_first_request_sends_nothing(
    server: FakeAnthropicServer, sleeps: Sleeps
) -> None:
    with make_client(sleeps, stop_requested=lambda: True) as client:
        err = failure(client, make_request(server.url))
    assert (err.reason, err.attempts) == ("cancelled", 0)
    assert server.requests == []


def test_stop_requested_during_a_backoff_sleep_cancels(
    server: FakeAnthropicServer, sleeps: Sleeps
) -> None:
    server.fail(503)
    server.reply("never")
    with make_client(sleeps, stop_requested=lambda: len(sleeps.seconds) >= 1) as client:
        err = failure(client, make_request(server.url))
    assert (err.reason, err.attempts) == ("cancelled", 1)
    assert sleeps.seconds == [0.5]
    assert len(server.requests) == 1


def test_an_on_retry_observer_that_raises_changes_nothing(
    server: FakeAnthropicServer, sleeps: Sleeps
) -> None:
    seen: list[RetryInfo] = []

    def explode(info: RetryInfo) -> None:
        raise RuntimeError("observer bug")

    server.fail(500)
    server.reply("fine")
    with make_client(sleeps, on_retry=(explode, seen.append)) as client:
        response = client.generate(make_request(server.url))
    assert (response.text, response.attempts) == ("fine", 2)
    assert [(info.attempt, info.failure.reason) for info in seen] == [(1, "server_error")]


# --- bad 200s ------------------------------------------------------------------------------------


def test_a_non_json_200_is_invalid_response_and_not_retried(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.malformed(b"<html>gateway says hi</html>", content_type="text/html")
    err = failure(client, make_request(server.url))
    assert (err.reason, err.retryable, err.http_status, err.attempts) == (
        "invalid_response",
        False,
        200,
        1,
    )


@pytest.mark.parametrize(
    "body",
    [
        {"hello": "world"},
        [1, 2, 3],
        {"content": "not a list"},
        {"content": [{"type": "text", "text": "x"}], "usage": {"input_tokens": "many"}},
    ],
)
def test_a_wrong_shaped_200_is_invalid_response(
    server: FakeAnthropicServer, client: AnthropicClient, body: Any
) -> None:
    server.reply_json(body)
    assert failure(client, make_request(server.url)).reason == "invalid_response"


def test_a_200_without_usage_keeps_its_text_and_says_usage_is_missing(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.reply_json(
        {"content": [{"type": "text", "text": "fine"}], "stop_reason": "end_turn", "model": MODEL}
    )
    response = client.generate(make_request(server.url))
    assert response.text == "fine"
    assert (response.usage.input_tokens, response.usage.cost_micro) == (0, 0)
    assert response.metadata["usage_missing"] is True


# --- keys, configuration, SDK clients ------------------------------------------------------------


def test_the_canary_key_is_absent_from_every_error(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    errors: list[LLMGenerateError] = []
    server.fail(401, message=f"invalid x-api-key: {CANARY}")
    server.fail(400, body={"error": {"message": f"key {CANARY} rejected"}})
    server.fail(429, headers={"retry-after": "9999"}, message=CANARY)
    server.malformed(CANARY.encode())
    for _ in range(4):
        errors.append(failure(client, make_request(server.url)))
    errors.append(failure(client, make_request(server.url, api_key=None)))
    assert [e.reason for e in errors] == [
        "auth",
        "invalid_request",
        "rate_limited",
        "invalid_response",
        "config",
    ]
    for err in errors:
        assert_no_canary(err)
    assert CANARY not in repr(make_request(server.url))


def test_a_missing_key_is_a_config_error_before_any_request(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    err = failure(client, make_request(server.url, api_key=None))
    assert (err.reason, err.provider) == ("config", "anthropic")
    assert server.requests == []


def counting_factory(made: list[tuple[bool, str]]) -> SDKFactory:
    """The real SDK constructor, counting what it builds."""
    import anthropic

    def build(is_async: bool, api_key: str, base_url: str) -> Any:
        made.append((is_async, base_url))
        cls = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        return cls(api_key=api_key, base_url=base_url, max_retries=0)

    return build


def test_one_sdk_client_per_endpoint_and_key_is_reused(server: FakeAnthropicServer) -> None:
    made: list[tuple[bool, str]] = []
    for _ in range(3):
        server.reply()
    with AnthropicClient(sdk_factory=counting_factory(made)) as client:
        client.generate(make_request(server.url))
        client.generate(make_request(server.url))
        client.generate(make_request(server.url, api_key="sk-ant-other-key-000000"))
        assert CANARY not in repr(vars(client))
    assert made == [(False, server.url), (False, server.url)]


def test_async_generation_matches_sync_and_reuses_one_client_per_loop(
    server: FakeAnthropicServer,
) -> None:
    made: list[tuple[bool, str]] = []
    client = AnthropicClient(sdk_factory=counting_factory(made))

    async def burst() -> list[LLMResponse]:
        async with client:
            calls = (client.agenerate(make_request(server.url)) for _ in range(20))
            return list(await asyncio.gather(*calls))

    for _ in range(40):
        server.reply("same", usage={"input_tokens": 3, "output_tokens": 1})
    first = asyncio.run(burst())
    second = asyncio.run(burst())
    assert {r.text for r in first + second} == {"same"}
    assert all(r.attempts == 1 for r in first + second)
    assert made == [(True, server.url), (True, server.url)]  # one per event loop


def test_async_retries_and_cancels_like_sync(server: FakeAnthropicServer, sleeps: Sleeps) -> None:
    server.fail(429, headers={"retry-after": "2"})
    server.reply("ok", usage={"input_tokens": 7, "output_tokens": 3})
    response = run_async(make_client(sleeps), make_request(server.url))
    assert (response.attempts, response.usage.input_tokens, sleeps.total) == (2, 7, 2.0)

    stopping = make_client(Sleeps(), stop_requested=lambda: True)
    with pytest.raises(LLMGenerateError) as caught:
        run_async(stopping, make_request(server.url))
    assert caught.value.reason == "cancelled"


def test_async_errors_are_the_same_sentinels(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.fail(401, message=CANARY)
    with pytest.raises(LLMGenerateError) as caught:
        run_async(client, make_request(server.url))
    assert (caught.value.reason, caught.value.attempts) == ("auth", 1)
    assert_no_canary(caught.value)


def test_verify_makes_one_minimal_request(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.reply("p", stop_reason="max_tokens")
    target = Target(provider="anthropic", model=MODEL, endpoint=server.url)
    response = client.verify(target, CANARY)
    body = server.requests[-1].body
    assert body["max_tokens"] == 1
    assert body["messages"] == [{"role": "user", "content": "ping"}]
    assert response.model == MODEL


def test_verify_reports_a_bad_key_as_auth_without_retrying(
    server: FakeAnthropicServer, client: AnthropicClient
) -> None:
    server.fail(401)
    with pytest.raises(LLMGenerateError) as caught:
        client.verify(Target(provider="anthropic", model=MODEL, endpoint=server.url), CANARY)
    assert (caught.value.reason, caught.value.attempts) == ("auth", 1)


def test_importing_the_adapter_does_not_import_the_sdk_and_a_missing_sdk_is_provider_unavailable() -> (
    None
):
    script = textwrap.dedent(
        """
        import sys
        import scriptorium.llm.anthropic as adapter
        assert "anthropic" not in sys.modules, "imported eagerly"
        sys.modules["anthropic"] = None  # as if not installed
        from scriptorium.errors import LLMGenerateError
        from scriptorium.llm.model import LLMRequest, Target
        request = LLMRequest(target=Target(provider="anthropic", model="m"), api_key="k")
        try:
            adapter.AnthropicClient().generate(request)
        except LLMGenerateError as err:
            print(err.reason)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.strip() == "provider_unavailable", done.stderr
