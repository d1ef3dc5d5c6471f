"""The Gemini adapter, end to end through the real ``google-genai`` SDK against FakeGeminiServer:
messages, usage and prices, finish reasons, errors and retries, structured output, reasoning,
token counting, verify, and Vertex AI's paths with fake credentials."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from scriptorium._testing.gemini_server import FakeGeminiServer
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.gemini.client import GeminiClient
from scriptorium.llm.gemini.stream import Source
from scriptorium.llm.model import LLMRequest, StructuredOutput, Target, Uncounted
from scriptorium.llm.retry import RetryHooks
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import MediaPart, Message, TextPart

CANARY = "AIza-canary-0123456789abcdefXYZ"
TOKEN_ENV = "SCRIPTORIUM_TEST_VERTEX_TOKEN"
TOKEN = "ya29.fake-access-token-0123456789"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "pattern": "^[A-Z]"},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    },
}
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure"


class Sleeps:
    """Records the retry loop's sleeps instead of sleeping."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.slept.append(seconds)

    async def asleep(self, seconds: float) -> None:
        self.slept.append(seconds)


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer() as fake:
        yield fake


@pytest.fixture
def server(shared_server: FakeGeminiServer) -> FakeGeminiServer:
    shared_server.clear()
    shared_server.count_tokens = None
    shared_server.count_tokens_status = None
    return shared_server


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def client(sleeps: Sleeps) -> Iterator[GeminiClient]:
    hooks = RetryHooks(sleep=sleeps, asleep=sleeps.asleep, jitter=lambda low, high: 1.0)
    adapter = GeminiClient(hooks=hooks)
    yield adapter
    adapter.close()


def make_request(
    server: FakeGeminiServer,
    *,
    model: str = "gemini-2.5-flash",
    structured: StructuredOutput | None = None,
    settings: ExecutionSettings | None = None,
    options: dict[str, Any] | None = None,
    system: str | None = "You extract contacts.",
    messages: tuple[Message, ...] | None = None,
    media: dict[str, bytes] | None = None,
    key: str | None = CANARY,
) -> LLMRequest:
    return LLMRequest(
        target=Target(provider="gemini", model=model, endpoint=server.url),
        api_key=key,
        system=system,
        messages=messages
        or (
            Message(role="user", content="Ada Lovelace, ada@example.org"),
            Message(role="assistant", content="Noted."),
            Message(role="user", content="Now the contact."),
        ),
        settings=settings or ExecutionSettings(),
        structured_output=structured,
        options=options or {},
        media=media or {},
    )


def wire(server: FakeGeminiServer, index: int = -1) -> dict[str, Any]:
    body = server.requests[index].body
    assert isinstance(body, dict)
    return body


# --- messages and the wire -------------------------------------------------------------------


def test_system_becomes_system_instruction_and_roles_become_user_and_model(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    """The system section is ``systemInstruction``; assistant turns are ``model`` contents; the
    key goes in the SDK's own header, on the Gemini API path of the model."""
    server.reply("hello")
    settings = ExecutionSettings(
        max_tokens=200, temperature=0.2, top_p=0.9, top_k=40, stop_sequences=("END",)
    )
    response = client.generate(make_request(server, settings=settings))
    assert response.text == "hello"
    sent = server.requests[-1]
    assert sent.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert sent.headers["x-goog-api-key"] == CANARY
    body = wire(server)
    assert body["systemInstruction"] == {"parts": [{"text": "You extract contacts."}]}
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][0]["parts"] == [{"text": "Ada Lovelace, ada@example.org"}]
    assert body["generationConfig"] == {
        "maxOutputTokens": 200,
        "temperature": 0.2,
        "topP": 0.9,
        "topK": 40,
        "stopSequences": ["END"],
    }
    assert response.metadata["provider"] == "gemini"
    assert response.metadata["response_id"].startswith("resp-fake-")


def test_a_gateway_request_id_and_cost_are_kept(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    """Through a gateway, its request id and reported cost go in the metadata, as for every
    adapter (Google's own ``x-goog-request-id`` first)."""
    server.reply(
        "via gateway", headers={"x-litellm-call-id": "call-7", "x-litellm-response-cost": "0.5"}
    )
    response = client.generate(make_request(server))
    assert response.metadata["request_id"] == "call-7"
    assert response.metadata["gateway_cost"] == {"header": "x-litellm-response-cost", "usd": 0.5}
    server.reply("direct", headers={"x-goog-request-id": "goog-1"})
    assert client.generate(make_request(server)).metadata["request_id"] == "goog-1"


def test_media_parts_are_inline_data(server: FakeGeminiServer, client: GeminiClient) -> None:
    """An image or a PDF goes as an ``inlineData`` part: its media type and base64 bytes."""
    data = b"%PDF-1.4 fake"
    part = MediaPart(name="scan", media_type="application/pdf", sha256="ab" * 32, size=len(data))
    message = Message(role="user", content=(TextPart(text="Read this:"), part))
    server.reply("read")
    client.generate(make_request(server, messages=(message,), media={"ab" * 32: data}))
    parts = wire(server)["contents"][0]["parts"]
    assert parts[0] == {"text": "Read this:"}
    assert parts[1] == {
        "inlineData": {"mimeType": "application/pdf", "data": "JVBERi0xLjQgZmFrZQ=="}
    }


def test_the_environment_does_not_redirect_or_rekey_a_request(
    server: FakeGeminiServer, client: GeminiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's own variables (key, base URL, Vertex AI switch, API version, replay mode) are
    never consulted: the profile alone says where a request goes and as whom."""
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-from-the-environment-000000")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-from-the-environment-111111")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    monkeypatch.setenv("GOOGLE_GENAI_API_VERSION", "v9")
    monkeypatch.setenv("GOOGLE_GENAI_CLIENT_MODE", "replay")
    server.reply("mine")
    assert client.generate(make_request(server)).text == "mine"
    sent = server.requests[-1]
    assert sent.headers["x-goog-api-key"] == CANARY
    assert sent.path.startswith("/v1beta/models/")


def test_a_request_without_a_key_or_model_is_a_config_error(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server, key=None))
    assert caught.value.reason == "config"
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server, model=""))
    assert caught.value.reason == "config"
    assert server.requests == []


# --- usage and prices --------------------------------------------------------------------------


def test_thoughts_are_output_tokens_priced_once_and_cached_tokens_are_cache_reads(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    """Gemini reports thoughts apart from the candidates' tokens: they are added to the output
    (priced once, at the output rate) and said as reasoning tokens; implicitly cached tokens are
    inside the prompt count and are priced at the cached rate."""
    server.reply(
        "hello",
        thoughts="Let me think.",
        prompt_tokens=1000,
        candidates_tokens=100,
        thoughts_tokens=400,
        cached_tokens=600,
    )
    response = client.generate(make_request(server))
    usage = response.usage
    assert (usage.input_tokens, usage.cache_read_input_tokens) == (400, 600)
    assert (usage.output_tokens, usage.reasoning_tokens) == (500, 400)
    assert response.reasoning == "Let me think."
    assert response.text == "hello"
    # gemini-2.5-flash: 0.30 in, 2.50 out, 0.03 cached (USD per Mtok):
    # 400 * 0.30 + 500 * 2.50 + 600 * 0.03 = 120 + 1250 + 18 micro-USD
    assert usage.cost_micro == 1388


def test_a_long_prompt_is_priced_at_the_long_context_rate(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    """Above 200,000 prompt tokens gemini-2.5-pro costs 2.50 in and 15 out; the adapter picks the
    tier from the prompt's size and prices with the shared mechanism."""
    server.reply("short", prompt_tokens=200_000, candidates_tokens=1000)
    short = client.generate(make_request(server, model="gemini-2.5-pro"))
    server.reply("long", prompt_tokens=200_001, candidates_tokens=1000)
    long = client.generate(make_request(server, model="gemini-2.5-pro"))
    assert short.usage.cost_micro == 200_000 * 125 // 100 + 10_000  # 250,000 + 10,000
    assert "price_tier" not in short.metadata
    assert long.usage.cost_micro == (200_001 * 250 + 1000 * 1500 + 50) // 100
    assert long.metadata["price_tier"] == "long_context"


def test_a_snapshot_name_is_priced_as_its_model_and_an_unknown_model_costs_zero(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.reply("a", prompt_tokens=1_000_000, candidates_tokens=0)
    dated = client.generate(make_request(server, model="gemini-2.5-flash-preview-09-2025"))
    assert dated.usage.cost_micro == 300_000
    server.reply("b")
    unknown = client.generate(make_request(server, model="gemini-9-ultra"))
    assert unknown.usage.cost_micro == 0
    assert "unknown model" in unknown.metadata["pricing"]


def test_a_missing_usage_is_said_and_a_broken_count_is_an_invalid_response(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.reply("no usage", usage=False)
    assert client.generate(make_request(server)).metadata["usage_missing"] is True
    server.reply_json(
        {
            "candidates": [{"content": {"parts": [{"text": "x"}]}}],
            "usageMetadata": {"promptTokenCount": "ten"},
        }
    )
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server))
    assert caught.value.reason == "invalid_response"


# --- finish reasons ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "finish"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "refusal"),
        ("RECITATION", "refusal"),
        ("BLOCKLIST", "refusal"),
        ("PROHIBITED_CONTENT", "refusal"),
        ("SPII", "refusal"),
        ("MALFORMED_FUNCTION_CALL", "MALFORMED_FUNCTION_CALL"),
        ("OTHER", "OTHER"),
        ("LANGUAGE", "LANGUAGE"),
        ("UNEXPECTED_TOOL_CALL", "UNEXPECTED_TOOL_CALL"),
        ("TOO_MANY_TOOL_CALLS", "TOO_MANY_TOOL_CALLS"),
        ("IMAGE_SAFETY", "refusal"),
        ("IMAGE_PROHIBITED_CONTENT", "refusal"),
        ("IMAGE_RECITATION", "refusal"),
        ("MODEL_ARMOR", "refusal"),
        ("SOMETHING_NEW", "SOMETHING_NEW"),
    ],
)
def test_finish_reasons_are_mapped_and_others_kept(
    server: FakeGeminiServer, client: GeminiClient, raw: str, finish: str
) -> None:
    server.reply("x", finish_reason=raw)
    response = client.generate(make_request(server))
    assert response.finish_reason == finish
    if raw != "STOP":
        assert response.metadata["provider_finish_reason"] == raw


def test_a_prompt_blocked_before_any_candidate_is_a_refusal_with_no_text(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.reply(block_reason="PROHIBITED_CONTENT")
    response = client.generate(make_request(server))
    assert (response.text, response.finish_reason) == ("", "refusal")
    assert response.metadata["block_reason"] == "PROHIBITED_CONTENT"


def test_a_200_without_candidates_or_json_is_an_invalid_response(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.reply_json({"usageMetadata": {}})
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server))
    assert caught.value.reason == "invalid_response"
    server.malformed(b"<html>gateway</html>", content_type="text/html")
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server))
    assert caught.value.reason == "invalid_response"


# --- errors and retries ------------------------------------------------------------------------


def test_a_rate_limit_waits_at_least_its_retry_info_delay_and_is_retried(
    server: FakeGeminiServer, client: GeminiClient, sleeps: Sleeps
) -> None:
    """429 RESOURCE_EXHAUSTED with a RetryInfo is a rate limit; its delay is a lower bound."""
    server.fail(429, details=[{"@type": RETRY_INFO, "retryDelay": "7s"}])
    server.reply("after")
    response = client.generate(make_request(server))
    assert (response.text, response.attempts) == ("after", 2)
    assert sum(sleeps.slept) == pytest.approx(7.0)


def test_a_daily_quota_is_not_retried(server: FakeGeminiServer, client: GeminiClient) -> None:
    violation = {"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}
    server.fail(429, details=[{"@type": QUOTA_FAILURE, "violations": [violation]}])
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server))
    assert (caught.value.reason, caught.value.retryable, caught.value.attempts) == (
        "quota",
        False,
        1,
    )


def test_spent_credits_are_a_quota_not_a_rate(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.fail(429, message="Your prepayment credits are depleted. Please go to AI Studio.")
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server))
    assert caught.value.reason == "quota"
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("status", "reason"), [(500, "server_error"), (503, "server_error"), (504, "timeout")]
)
def test_server_errors_and_deadlines_are_retried(
    server: FakeGeminiServer, client: GeminiClient, status: int, reason: str
) -> None:
    server.fail(status)
    server.fail(status)
    server.fail(status)
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server))
    assert (caught.value.reason, caught.value.attempts) == (reason, 3)
    assert caught.value.http_status == status


@pytest.mark.parametrize(
    ("status", "reason"),
    [(400, "invalid_request"), (403, "permission"), (404, "not_found"), (401, "auth")],
)
def test_client_errors_are_not_retried(
    server: FakeGeminiServer, client: GeminiClient, status: int, reason: str
) -> None:
    server.fail(status)
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server))
    assert (caught.value.reason, caught.value.attempts) == (reason, 1)
    assert CANARY not in str(caught.value)


def test_a_key_the_api_refuses_is_an_auth_error(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
    server.fail(400, message="API key not valid. Please pass a valid API key.", details=[info])
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server))
    assert (caught.value.reason, caught.value.retryable) == ("auth", False)


def test_a_reset_connection_is_retried(server: FakeGeminiServer, client: GeminiClient) -> None:
    server.reset_connection()
    server.reply("again")
    response = client.generate(make_request(server))
    assert (response.text, response.attempts) == ("again", 2)


def test_a_fallback_budget_bounds_every_path_of_a_call(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    """A request's ``budget_s`` (what a fallback chain has left) bounds the retry loop of
    generate, stream and countTokens alike, as for every SDK adapter: an answer slower than the
    budget is a timeout after the budget, not after ``timeout_s``."""
    settings = ExecutionSettings(timeout_s=30, max_retries=2)
    request = make_request(server, settings=settings).model_copy(update={"budget_s": 0.4})
    call = client.call(request)
    assert call.retry_args(client.hooks)["policy"].timeout_s == 0.4
    assert Source(call).retry_args(client.hooks)["policy"].timeout_s == 0.4
    server.delay(3.0, "too late")
    started = time.monotonic()
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(request)
    assert caught.value.reason == "timeout"
    assert time.monotonic() - started < 3.0


def test_async_generate_retries_the_same_way(server: FakeGeminiServer, sleeps: Sleeps) -> None:
    async def main() -> str:
        hooks = RetryHooks(sleep=sleeps, asleep=sleeps.asleep, jitter=lambda low, high: 1.0)
        async with GeminiClient(hooks=hooks) as adapter:
            server.fail(503)
            server.reply("async")
            response = await adapter.agenerate(make_request(server))
            assert response.attempts == 2
            return response.text

    assert asyncio.run(main()) == "async"


# --- structured output ---------------------------------------------------------------------------


def test_native_sends_the_reduced_json_schema_and_reports_the_drops(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.reply('{"name": "Ada"}')
    structured = StructuredOutput(schema_=SCHEMA, strategy="native")
    response = client.generate(make_request(server, structured=structured))
    config = wire(server)["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    sent = config["responseJsonSchema"]
    assert sent["properties"]["name"] == {"type": "string"}
    assert sent["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert response.metadata["strategy"] == "native"
    assert response.metadata["schema_dropped"] == ["minLength", "pattern", "uniqueItems"]


def test_auto_picks_native_and_prompt_puts_the_schema_in_the_system_instruction(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.reply('{"name": "Ada"}')
    auto = client.generate(make_request(server, structured=StructuredOutput(schema_=SCHEMA)))
    assert auto.metadata["strategy"] == "native"
    server.reply('{"name": "Ada"}')
    structured = StructuredOutput(schema_=SCHEMA, strategy="prompt")
    prompt = client.generate(make_request(server, structured=structured))
    body = wire(server)
    assert prompt.metadata["strategy"] == "prompt"
    assert "responseMimeType" not in body["generationConfig"]
    assert "JSON Schema" in body["systemInstruction"]["parts"][0]["text"]


def test_the_tool_strategy_forces_one_function_and_answers_with_its_arguments(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.reply_tool({"name": "Ada"})
    structured = StructuredOutput(schema_=SCHEMA, strategy="tool", name="contact card")
    response = client.generate(make_request(server, structured=structured))
    body = wire(server)
    declaration = body["tools"][0]["functionDeclarations"][0]
    assert declaration["name"] == "contact_card"
    assert body["toolConfig"]["functionCallingConfig"] == {
        "mode": "ANY",
        "allowedFunctionNames": ["contact_card"],
    }
    assert (response.text, response.finish_reason) == ('{"name": "Ada"}', "stop")


# --- reasoning -----------------------------------------------------------------------------------


def test_reasoning_sends_thinking_config_and_keeps_the_thoughts(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.reply("42", thoughts="Six times seven.", thoughts_tokens=12)
    settings = ExecutionSettings(max_tokens=4000, reasoning="low")
    response = client.generate(make_request(server, settings=settings))
    assert wire(server)["generationConfig"]["thinkingConfig"] == {
        "thinkingBudget": 1024,
        "includeThoughts": True,
    }
    assert (response.text, response.reasoning) == ("42", "Six times seven.")
    assert response.usage.reasoning_tokens == 12


def test_reasoning_level_models_get_a_thinking_level(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.reply("ok")
    settings = ExecutionSettings(reasoning="xhigh")
    client.generate(make_request(server, model="gemini-3-pro-preview", settings=settings))
    assert wire(server)["generationConfig"]["thinkingConfig"] == {
        "thinkingLevel": "high",
        "includeThoughts": True,
    }


# --- counting and verify -------------------------------------------------------------------------


def test_count_tokens_asks_count_tokens_with_the_whole_request(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.count_tokens = 321
    assert client.count_tokens(make_request(server)) == 321
    sent = server.requests[-1]
    assert sent.path == "/v1beta/models/gemini-2.5-flash:countTokens"
    inner = sent.body["generateContentRequest"]
    assert inner["model"] == "models/gemini-2.5-flash"
    assert inner["systemInstruction"] == {"parts": [{"text": "You extract contacts."}]}
    assert len(inner["contents"]) == 3


def test_an_endpoint_that_cannot_count_is_uncounted(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.count_tokens_status = 404
    counted = client.count_tokens(make_request(server))
    assert isinstance(counted, Uncounted)
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [429, 500, 503])
def test_any_failure_of_the_count_route_is_uncounted_at_once_saying_why(
    server: FakeGeminiServer, client: GeminiClient, status: int
) -> None:
    """A gateway's 500 on the Gemini route (or a limit) gives the estimate, asked once: never
    retries that end in a failure."""
    server.count_tokens_status = status
    counted = client.count_tokens(make_request(server))
    assert isinstance(counted, Uncounted)
    assert f"HTTP {status}" in counted.reason
    assert len(server.requests) == 1


def test_a_refused_key_while_counting_still_fails(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    server.count_tokens_status = 401
    with pytest.raises(LLMGenerateError) as caught:
        client.count_tokens(make_request(server))
    assert caught.value.reason == "auth"


def test_verify_sends_one_small_request(server: FakeGeminiServer, client: GeminiClient) -> None:
    server.reply("pong")
    target = Target(provider="gemini", model="gemini-2.5-flash", endpoint=server.url)
    response = client.verify(target, CANARY)
    assert response.text == "pong"
    body = wire(server)
    assert body["generationConfig"]["maxOutputTokens"] <= 16
    assert len(body["contents"]) == 1


# --- Vertex AI -----------------------------------------------------------------------------------


VERTEX = {"vertexai": True, "project": "proj-1", "location": "us-central1"}


def test_vertex_ai_paths_and_an_access_token_from_its_variable(
    server: FakeGeminiServer, client: GeminiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vertex AI: the project and location in the path, the publisher's model, the access token
    (read by the run from the variable ``options.access_token_env`` names, and carried as the
    request's key) as a bearer token; no API key, and nothing read from the environment."""
    monkeypatch.setenv(TOKEN_ENV, "ya29.not-the-token-the-request-carries")
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-from-the-environment-000000")
    options = {**VERTEX, "access_token_env": TOKEN_ENV}
    server.reply("vertex hello")
    response = client.generate(make_request(server, options=options, key=TOKEN))
    assert response.text == "vertex hello"
    assert response.metadata["platform"] == "vertexai"
    sent = server.requests[-1]
    assert sent.path == (
        "/v1beta1/projects/proj-1/locations/us-central1/publishers/google/models/"
        "gemini-2.5-flash:generateContent"
    )
    assert sent.headers["authorization"] == f"Bearer {TOKEN}"
    assert "x-goog-api-key" not in sent.headers


def test_vertex_ai_streams_and_counts_on_its_paths(
    server: FakeGeminiServer, client: GeminiClient
) -> None:
    options = {**VERTEX, "access_token_env": TOKEN_ENV}
    request = make_request(server, options=options, key=TOKEN)
    server.reply("streamed on vertex", chunks=5)
    items = list(client.stream(request))
    assert "".join(i for i in items if isinstance(i, str)) == "streamed on vertex"
    assert server.requests[-1].path.endswith(
        "/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    server.count_tokens = 9
    assert client.count_tokens(request) == 9
    counted = server.requests[-1]
    assert counted.path.startswith("/v1beta1/projects/proj-1/locations/us-central1/")
    assert "generateContentRequest" not in counted.body
    assert len(counted.body["contents"]) == 3


def test_vertex_ai_with_an_unset_token_variable_is_a_config_error(
    server: FakeGeminiServer, client: GeminiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request built by hand that names a token variable but carries no token: the adapter
    reads no variable (a run reads it like a key), so it says what is missing, by name."""
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    options = {**VERTEX, "access_token_env": TOKEN_ENV}
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server, options=options, key=None))
    assert caught.value.reason == "config"
    assert TOKEN_ENV in str(caught.value)
    assert server.requests == []


def test_vertex_ai_without_default_credentials_is_a_config_error(
    server: FakeGeminiServer, client: GeminiClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """No token variable: Google's default credentials; where there are none, ``config``."""
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(make_request(server, options=dict(VERTEX), key=None))
    assert caught.value.reason == "config"
    assert server.requests == []


def test_every_ending_the_fake_knows_is_in_the_adapters_table() -> None:
    """The table covers every documented ending: none passes through unmapped by oversight."""
    from scriptorium._testing.gemini_server import ENDINGS
    from scriptorium.llm.gemini.call import FINISH

    assert set(ENDINGS) <= set(FINISH)
    assert FINISH["STOP"] == "stop"
    assert all(FINISH[e] != "stop" for e in ENDINGS)
