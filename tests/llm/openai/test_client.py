"""The OpenAI adapter, end to end through the real ``openai`` SDK against FakeOpenAIServer."""

from __future__ import annotations

import asyncio
import pickle
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from scriptorium._testing.openai_server import FakeOpenAIServer
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import LLMRequest, LLMResponse, StructuredOutput, Target
from scriptorium.llm.openai.client import OpenAIClient
from scriptorium.llm.retry import RetryHooks
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message

CANARY = "sk-canary-0123456789abcdefXYZ"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    },
}


class Sleeps:
    """Records the retry loop's sleeps instead of sleeping."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.slept.append(seconds)

    async def asleep(self, seconds: float) -> None:
        self.slept.append(seconds)


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def server(shared_server: FakeOpenAIServer) -> FakeOpenAIServer:
    shared_server.clear()
    return shared_server


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def client(sleeps: Sleeps) -> Iterator[OpenAIClient]:
    hooks = RetryHooks(sleep=sleeps, asleep=sleeps.asleep, jitter=lambda low, high: 1.0)
    adapter = OpenAIClient(hooks=hooks)
    yield adapter
    adapter.close()


def make_request(
    server: FakeOpenAIServer,
    *,
    model: str = "gpt-4o-mini",
    structured: StructuredOutput | None = None,
    settings: ExecutionSettings | None = None,
    options: dict[str, Any] | None = None,
    system: str | None = "You extract contacts.",
) -> LLMRequest:
    return LLMRequest(
        target=Target(provider="openai", model=model, endpoint=server.url),
        api_key=CANARY,
        system=system,
        messages=(
            Message(role="user", content="Ada Lovelace, ada@example.org"),
            Message(role="assistant", content="Noted."),
            Message(role="user", content="Now the contact."),
        ),
        settings=settings or ExecutionSettings(),
        structured_output=structured,
        options=options or {},
    )


def wire(server: FakeOpenAIServer, index: int = -1) -> dict[str, Any]:
    body = server.requests[index].body
    assert isinstance(body, dict)
    return body


def test_success_reports_text_usage_with_cached_tokens_cost_and_request_id(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """Cached prompt tokens are split out of input tokens, so the price table charges each once."""
    server.reply("hello", prompt_tokens=1000, completion_tokens=500, cached_tokens=200)
    response = client.generate(make_request(server))
    assert response.text == "hello"
    assert response.finish_reason == "stop"
    assert response.attempts == 1
    usage = response.usage
    assert (usage.input_tokens, usage.cache_read_input_tokens, usage.output_tokens) == (
        800,
        200,
        500,
    )
    # gpt-4o-mini: 0.15 in, 0.60 out, 0.075 cached (USD per Mtok) -> 120 + 300 + 15 micro-USD
    assert usage.cost_micro == 435
    assert usage.llm_calls == 1
    assert response.metadata["request_id"].startswith("req_fake_")
    assert response.metadata["strategy"] is None


@pytest.mark.parametrize("strategy", ["native", "tool", "prompt"])
def test_the_adapter_sends_what_the_sdks_typed_create_sends(
    server: FakeOpenAIServer, client: OpenAIClient, strategy: str
) -> None:
    """The adapter posts its own body with the SDK's lower-level ``post``: the same JSON and the
    same headers as ``chat.completions.create(**params)`` (less the typed layer's own marker)."""
    import openai

    from scriptorium.llm.openai.body import build_params

    structured = StructuredOutput(
        format="json_schema",
        schema_={
            "type": "object",
            "properties": {"email": {"type": "string"}},
            "required": ["email"],
            "additionalProperties": False,
        },
        strategy=strategy,
    )
    request = make_request(server, structured=structured)
    client.generate(request)
    ours = server.requests[-1]
    params, _ = build_params(request)
    sdk = openai.OpenAI(api_key=CANARY, base_url=server.url, max_retries=0)
    with sdk:
        sdk.chat.completions.create(**params, timeout=ExecutionSettings().timeout_s)
    typed = server.requests[-1]
    assert ours.path == typed.path == "/v1/chat/completions"
    assert ours.body == typed.body
    different = {"x-stainless-timeout", "x-stainless-read-timeout", "content-length"}
    assert {k: v for k, v in ours.headers.items() if k not in different} == {
        k: v for k, v in typed.headers.items() if k not in different
    }


def test_unknown_model_costs_zero_and_says_so(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """A model missing from the price table costs 0 with a note in the metadata."""
    response = client.generate(make_request(server, model="llama3.1:8b"))
    assert response.usage.cost_micro == 0
    assert "unknown model" in response.metadata["pricing"]


def test_system_prompt_and_roles_are_mapped_and_the_key_is_a_bearer_token(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """The system prompt is the first message; roles keep their order; the key goes as bearer."""
    client.generate(make_request(server))
    body = wire(server)
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["messages"][0]["content"] == "You extract contacts."
    assert server.requests[-1].headers["authorization"] == f"Bearer {CANARY}"
    assert server.requests[-1].path == "/v1/chat/completions"


def test_settings_are_mapped_and_top_k_is_not_sent(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """A non-OpenAI endpoint gets max_tokens; temperature, top_p and stop pass; top_k does not."""
    settings = ExecutionSettings(
        max_tokens=77, temperature=0.0, top_p=0.5, top_k=40, stop_sequences=("END",)
    )
    client.generate(make_request(server, settings=settings))
    body = wire(server)
    assert body["max_tokens"] == 77
    assert "max_completion_tokens" not in body
    assert (body["temperature"], body["top_p"], body["stop"]) == (0.0, 0.5, ["END"])
    assert "top_k" not in body


def test_a_profile_can_choose_max_completion_tokens(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """options.max_tokens_field picks the parameter name (OpenAI's reasoning models need it)."""
    client.generate(make_request(server, options={"max_tokens_field": "max_completion_tokens"}))
    assert wire(server)["max_completion_tokens"] == 1024
    assert "max_tokens" not in wire(server)


def test_native_strategy_sends_a_strict_reduced_json_schema(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """auto means native: a strict json_schema with every property required and objects closed."""
    structured = StructuredOutput(schema_=SCHEMA, name="contact card", strategy="auto")
    response = client.generate(make_request(server, structured=structured))
    fmt = wire(server)["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "contact_card"
    assert fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["required"] == ["name", "tags"]
    assert schema["additionalProperties"] is False
    assert "minLength" not in schema["properties"]["name"]
    assert "uniqueItems" not in schema["properties"]["tags"]
    assert response.metadata["strategy"] == "native"


def test_native_strategy_sends_an_open_schema_non_strict(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """A schema strict mode cannot express (an open map) goes as is with strict false."""
    open_map = {"type": "object", "additionalProperties": {"type": "integer"}}
    client.generate(
        make_request(server, structured=StructuredOutput(schema_=open_map, strategy="native"))
    )
    fmt = wire(server)["response_format"]["json_schema"]
    assert fmt["strict"] is False
    assert fmt["schema"] == open_map


def test_tool_strategy_forces_one_function_and_returns_its_arguments(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """tool: a strict function forced by tool_choice; the output text is the arguments string."""
    server.reply_tool('{"name": "Ada", "tags": []}')
    structured = StructuredOutput(schema_=SCHEMA, name="contact", strategy="tool")
    response = client.generate(make_request(server, structured=structured))
    body = wire(server)
    assert body["tool_choice"] == {"type": "function", "function": {"name": "contact"}}
    (tool,) = body["tools"]
    assert tool["function"]["name"] == "contact"
    assert tool["function"]["strict"] is True
    assert tool["function"]["parameters"]["required"] == ["name", "tags"]
    assert "response_format" not in body
    assert response.text == '{"name": "Ada", "tags": []}'
    assert response.metadata["strategy"] == "tool"


def test_prompt_strategy_puts_the_schema_in_the_system_prompt(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """prompt: no response_format or tools; the system message carries the schema."""
    structured = StructuredOutput(schema_=SCHEMA, strategy="prompt")
    client.generate(make_request(server, structured=structured))
    body = wire(server)
    assert "response_format" not in body
    assert "tools" not in body
    system = body["messages"][0]["content"]
    assert system.startswith("You extract contacts.")
    assert '"minLength": 1' in system


def test_json_format_without_schema_uses_json_mode_and_mentions_json(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """json without a schema is json_object mode, whose prompts must say "JSON"."""
    structured = StructuredOutput(format="json", strategy="auto")
    client.generate(make_request(server, structured=structured, system=None))
    body = wire(server)
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0] == {"role": "system", "content": "Respond in JSON."}


def test_429_with_retry_after_then_success_counts_both_attempts(
    server: FakeOpenAIServer, client: OpenAIClient, sleeps: Sleeps
) -> None:
    """retry-after is waited (through the injected sleep); tokens are the success's only."""
    server.fail(429, code="rate_limit_exceeded", headers={"retry-after": "2"})
    server.reply("late", prompt_tokens=7, completion_tokens=3)
    response = client.generate(make_request(server))
    assert response.text == "late"
    assert response.attempts == 2
    assert response.usage.llm_calls == 2
    assert (response.usage.input_tokens, response.usage.output_tokens) == (7, 3)
    assert sum(sleeps.slept) == pytest.approx(2.0)
    assert len(server.requests) == 2


def test_insufficient_quota_429_is_not_retried(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """A spend-limit 429 is quota, not a rate limit: one request, not retryable."""
    server.fail(429, code="insufficient_quota", error_type="insufficient_quota")
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server))
    err = caught.value
    assert (err.reason, err.retryable, err.http_status, err.attempts) == ("quota", False, 429, 1)
    assert len(server.requests) == 1


def test_401_is_auth_and_not_retried(server: FakeOpenAIServer, client: OpenAIClient) -> None:
    """A bad key fails at once with reason auth."""
    server.fail(401, code="invalid_api_key", message="Incorrect API key provided.")
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server))
    assert (caught.value.reason, caught.value.http_status, caught.value.attempts) == (
        "auth",
        401,
        1,
    )
    assert len(server.requests) == 1


def test_context_length_exceeded_is_context_window(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """The error code, not the message, says the prompt was too long."""
    server.fail(400, code="context_length_exceeded")
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server))
    assert caught.value.reason == "context_window"
    assert caught.value.retryable is False


def test_500_is_retried_until_it_succeeds(server: FakeOpenAIServer, client: OpenAIClient) -> None:
    """Server errors are retried: two 500s then a success is three attempts."""
    server.fail(500)
    server.fail(500)
    server.reply("third time")
    response = client.generate(make_request(server))
    assert (response.text, response.attempts) == ("third time", 3)


def test_500_until_the_limit_fails_as_server_error(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """max_retries=1 allows two requests; the error keeps the last status."""
    for _ in range(3):
        server.fail(503)
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server, settings=ExecutionSettings(max_retries=1)))
    assert (caught.value.reason, caught.value.attempts, caught.value.http_status) == (
        "server_error",
        2,
        503,
    )


def test_connection_refused_is_a_retryable_connection_failure(client: OpenAIClient) -> None:
    """Nothing listening: every attempt fails with reason connection."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    request = LLMRequest(
        target=Target(provider="openai", model="gpt-4o", endpoint=f"http://127.0.0.1:{port}/v1"),
        api_key=CANARY,
        messages=(Message(role="user", content="hi"),),
    )
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(request)
    assert (caught.value.reason, caught.value.retryable, caught.value.attempts) == (
        "connection",
        True,
        3,
    )


def test_connection_reset_is_retried(server: FakeOpenAIServer, client: OpenAIClient) -> None:
    """A reset connection is a transport failure worth another request."""
    server.reset_connection()
    server.reply("after reset")
    response = client.generate(make_request(server))
    assert (response.text, response.attempts) == ("after reset", 2)


def test_a_slow_answer_times_out_within_the_budget(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """The per-attempt timeout is what is left of timeout_s."""
    server.delay(2.0)
    settings = ExecutionSettings(timeout_s=0.3, max_retries=0)
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server, settings=settings))
    assert (caught.value.reason, caught.value.attempts) == ("timeout", 1)


def test_non_json_200_is_invalid_response(server: FakeOpenAIServer, client: OpenAIClient) -> None:
    """A malformed 200 is reported, not crashed on, and not retried."""
    server.malformed(b"<html>gateway</html>", content_type="text/html")
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server))
    assert (caught.value.reason, caught.value.attempts) == ("invalid_response", 1)


def test_wrong_shaped_200_is_invalid_response(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """JSON without choices is not a completion."""
    server.reply_json({"object": "chat.completion", "choices": []})
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server))
    assert caught.value.reason == "invalid_response"


def test_200_without_usage_reports_zero_tokens(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """Some compatible servers omit usage: zero tokens, flagged in metadata."""
    server.reply("no usage", usage=False)
    response = client.generate(make_request(server))
    assert response.usage.input_tokens == response.usage.output_tokens == 0
    assert response.metadata["usage_missing"] is True


@pytest.mark.parametrize(
    ("finish", "refusal", "expected"),
    [
        ("length", None, "length"),
        ("content_filter", None, "refusal"),
        ("stop", "I can't help with that.", "refusal"),
        ("tool_calls", None, "tool_use"),
        ("eos", None, "eos"),
    ],
)
def test_finish_reasons_are_mapped(
    server: FakeOpenAIServer,
    client: OpenAIClient,
    finish: str,
    refusal: str | None,
    expected: str,
) -> None:
    """length, content filtering, refusals and tool calls map to scriptorium's names."""
    server.reply(None if refusal else "partial", finish_reason=finish, refusal=refusal)
    response = client.generate(make_request(server))
    assert response.finish_reason == expected
    if refusal:
        assert response.text == refusal
        assert response.metadata["refusal"] == refusal


def test_the_key_never_appears_in_errors(server: FakeOpenAIServer, client: OpenAIClient) -> None:
    """Even a server echoing the key (whole or masked) cannot put it into str, repr or pickle."""
    server.fail(401, message=f"Incorrect API key provided: {CANARY} (sk-can***XYZ)")
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server))
    err = caught.value
    for form in (str(err), repr(err), pickle.dumps(err).decode("latin-1")):
        assert CANARY not in form
        assert "XYZ" not in form


def test_a_request_without_a_key_sends_no_authorization(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """A local server's profile naming no key (prepare decides that is allowed): the SDK is built
    with a placeholder it insists on, and the request goes without ``Authorization``."""
    request = make_request(server).model_copy(update={"api_key": None})
    assert client.generate(request).text == "ok"
    assert "authorization" not in server.requests[-1].headers


def test_an_async_or_streamed_request_without_a_key_sends_no_authorization(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    request = make_request(server).model_copy(update={"api_key": None})

    async def run() -> list[object]:
        await client.agenerate(request)
        return [item async for item in client.astream(request)]

    assert asyncio.run(run())
    assert list(client.stream(request))
    assert len(server.requests) == 3
    assert all("authorization" not in r.headers for r in server.requests)


def test_the_sdk_picks_nothing_up_from_the_environment(
    server: FakeOpenAIServer, client: OpenAIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Organization, project and custom headers from OPENAI_* variables are not sent."""
    monkeypatch.setenv("OPENAI_ORG_ID", "org-from-env")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-from-env")
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "X-Env-Header: leaked")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    client.generate(make_request(server))
    headers = server.requests[-1].headers
    assert "openai-organization" not in headers
    assert "openai-project" not in headers
    assert "x-env-header" not in headers


def test_one_sdk_client_serves_repeated_requests(
    server: FakeOpenAIServer, client: OpenAIClient
) -> None:
    """Requests to the same endpoint with the same key reuse one connection pool."""
    client.generate(make_request(server))
    client.generate(make_request(server))
    ports = {r.headers.get("host") for r in server.requests}
    assert len(ports) == 1
    assert len(client.clients._sync) == 1


def test_agenerate_works_and_retries_through_the_async_sleep(
    server: FakeOpenAIServer, client: OpenAIClient, sleeps: Sleeps
) -> None:
    """The async twin shares the request mapping and the retry rules."""
    server.fail(429, headers={"retry-after-ms": "1500", "retry-after": "9"})
    server.reply("async ok")

    async def run() -> LLMResponse:
        try:
            return await client.agenerate(make_request(server))
        finally:
            await client.aclose()

    response = asyncio.run(run())
    assert (response.text, response.attempts) == ("async ok", 2)
    assert sum(sleeps.slept) == pytest.approx(1.5)


def test_verify_makes_one_small_request(server: FakeOpenAIServer, client: OpenAIClient) -> None:
    """verify() proves key, endpoint and model with a few output tokens."""
    target = Target(provider="openai", model="gpt-4o-mini", endpoint=server.url)
    response = client.verify(target, CANARY)
    assert response.text == "ok"
    body = wire(server)
    assert body["model"] == "gpt-4o-mini"
    assert body["max_tokens"] == 16
