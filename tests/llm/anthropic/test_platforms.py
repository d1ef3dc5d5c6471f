"""Claude on Amazon Bedrock and Google Vertex AI: the anthropic provider's ``platform`` option,
through the real ``AnthropicBedrock`` / ``AnthropicVertex`` classes against the loopback fakes of
each platform's own routes, with fake credentials (AWS keys in the environment for SigV4, an
access token from ``options.access_token_env`` for Vertex; google-auth is never consulted).

What is asserted is what the platform would see: the path, the auth header and the body on the
wire, streamed and not; the errors classified as on Anthropic's own API; no credential in any
output form."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import pickle
import re
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scriptorium import Engine, errors
from scriptorium._testing.bedrock_server import FakeBedrockServer
from scriptorium._testing.eventstream import chunk_message, encode_message, exception_message
from scriptorium._testing.vertex_server import FakeVertexServer
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.anthropic.client import AnthropicClient
from scriptorium.llm.anthropic.eventstream import BedrockEvents, MessageDecoder
from scriptorium.llm.anthropic.model_ids import base_model
from scriptorium.llm.anthropic.platforms import option_problems
from scriptorium.llm.model import LLMRequest, LLMResponse, Target
from scriptorium.llm.retry import RetryHooks
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message

AWS_KEY_ID = "AKIAFAKE0PLATFORM0ID"
AWS_SECRET = "aws-secret-canary-7d1f0b9e2c4a"
VERTEX_TOKEN = "ya29.vertex-token-canary-51c7e0"
BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
VERTEX_MODEL = "claude-sonnet-4-5@20250929"


async def _no_sleep(_seconds: float) -> None:
    return None


HOOKS = RetryHooks(sleep=lambda _s: None, asleep=_no_sleep, jitter=lambda _lo, _hi: 1.0)


@pytest.fixture(autouse=True)
def aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fake AWS credentials in the environment (the first link of the standard chain), and
    nothing else of the chain reachable: no shared files, no instance metadata; and a Google
    credentials file that does not exist, so consulting google-auth would fail."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("ANTHROPIC_BEDROCK_BASE_URL", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "no-google.json"))


@pytest.fixture(scope="module")
def bedrock_server() -> Iterator[FakeBedrockServer]:
    with FakeBedrockServer(default_text=None) as server:
        yield server


@pytest.fixture(scope="module")
def vertex_server() -> Iterator[FakeVertexServer]:
    with FakeVertexServer(default_text=None) as server:
        yield server


@pytest.fixture
def bedrock(bedrock_server: FakeBedrockServer) -> FakeBedrockServer:
    bedrock_server.reset()
    return bedrock_server


@pytest.fixture
def vertex(vertex_server: FakeVertexServer) -> FakeVertexServer:
    vertex_server.reset()
    vertex_server.count_tokens = None
    vertex_server.count_requests.clear()
    return vertex_server


def _project(root: Path, bedrock_url: str, vertex_url: str) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "greet.prompt.md").write_text(
        "---\nprofile: bedrock\n---\nSay hello to {{ name }}.\n"
    )
    (root / "profiles" / "bedrock.yaml").write_text(
        f"provider: anthropic\nmodel: {BEDROCK_MODEL}\nendpoint: {bedrock_url}\n"
        "allow_insecure_http: true\noptions: {platform: bedrock, region: us-east-1}\n"
    )
    (root / "profiles" / "vertex.yaml").write_text(
        f"provider: anthropic\nmodel: '{VERTEX_MODEL}'\nendpoint: {vertex_url}\n"
        "allow_insecure_http: true\noptions: {platform: vertex, project: demo-project, "
        "region: us-east5, access_token_env: VERTEX_TOKEN}\n"
    )
    (root / "profiles" / "claude.yaml").write_text(
        "provider: anthropic\nmodel: claude-sonnet-4-5-20250929\napi_key_env: ANTHROPIC_KEY\n"
    )
    return root


@pytest.fixture
def engine(tmp_path: Path, bedrock: FakeBedrockServer, vertex: FakeVertexServer) -> Engine:
    root = _project(tmp_path / "project", bedrock.url, vertex.url)
    return Engine(
        root, env={"VERTEX_TOKEN": VERTEX_TOKEN, "ANTHROPIC_KEY": "sk-ant-x"}, retry_hooks=HOOKS
    )


def _no_secret(*texts: str) -> None:
    for text in texts:
        assert AWS_SECRET not in text
        assert VERTEX_TOKEN not in text


def _bedrock_request(url: str, **fields: Any) -> LLMRequest:
    base: dict[str, Any] = {
        "target": Target(provider="anthropic", model=BEDROCK_MODEL, endpoint=url),
        "messages": (Message(role="user", content="Hello"),),
        "options": {"platform": "bedrock", "region": "us-east-1"},
    }
    base.update(fields)
    return LLMRequest(**base)


def _vertex_request(url: str, **fields: Any) -> LLMRequest:
    base: dict[str, Any] = {
        "target": Target(provider="anthropic", model=VERTEX_MODEL, endpoint=url),
        "api_key": VERTEX_TOKEN,
        "messages": (Message(role="user", content="Hello"),),
        "options": {"platform": "vertex", "project": "demo-project", "region": "us-east5"},
    }
    base.update(fields)
    return LLMRequest(**base)


def _failure(client: AnthropicClient, request: LLMRequest) -> LLMGenerateError:
    with pytest.raises(LLMGenerateError) as caught:
        client.generate(request)
    err = caught.value
    _no_secret(str(err), repr(err), pickle.dumps(err).decode("latin-1"))
    return err


NO_RETRY = ExecutionSettings(max_retries=0)


# --- Bedrock: the wire --------------------------------------------------------------------------


def test_bedrock_run_is_signed_sigv4_to_the_invoke_route_with_the_bedrock_body(
    engine: Engine, bedrock: FakeBedrockServer
) -> None:
    bedrock.reply("Hello, Ada!", usage={"input_tokens": 1000, "output_tokens": 10})
    result = engine.run("greet", inputs={"name": "Ada"})
    assert result.output.text == "Hello, Ada!"
    sent = bedrock.requests[-1]
    assert sent.path == f"/model/{BEDROCK_MODEL}/invoke"
    # (The SDK caches one AWS session per region and profile in the process: the key id is
    # whichever fake key the first Bedrock test of the process signed with.)
    assert re.match(
        r"AWS4-HMAC-SHA256 Credential=AKIA[A-Z0-9]+/\d{8}/us-east-1/bedrock/aws4_request, "
        r"SignedHeaders=[^ ]+, Signature=[0-9a-f]{64}$",
        sent.headers["authorization"],
    )
    assert "x-amz-date" in sent.headers
    assert "x-api-key" not in sent.headers
    # The model travels in the path, the version in the body (Bedrock's form), no stream flag.
    assert "model" not in sent.body
    assert sent.body["anthropic_version"]  # the SDK class adds its version member
    assert "stream" not in sent.body
    assert sent.body["messages"] == [{"role": "user", "content": "Say hello to Ada."}]
    # Priced as the base model (claude-sonnet-4-5: $3 in, $15 out per million).
    assert result.usage.cost_micro == 3000 + 150
    _no_secret(result.model_dump_json())


def test_bedrock_stream_reads_the_aws_event_stream(
    engine: Engine, bedrock: FakeBedrockServer
) -> None:
    bedrock.reply("one two three four", chunks=4)
    with engine.stream("greet", inputs={"name": "Ada"}) as stream:
        deltas = [event.text for event in stream if event.type == "text_delta"]
        result = stream.result()
    assert "".join(deltas) == "one two three four"
    assert len(deltas) > 1
    assert result.output.text == "one two three four"
    sent = bedrock.requests[-1]
    assert sent.path == f"/model/{BEDROCK_MODEL}/invoke-with-response-stream"
    assert sent.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=")


def test_bedrock_async_generate(bedrock: FakeBedrockServer) -> None:
    bedrock.reply("async hello")

    async def once() -> LLMResponse:
        async with AnthropicClient(hooks=HOOKS) as client:
            return await client.agenerate(_bedrock_request(bedrock.url))

    response = asyncio.run(once())
    assert response.text == "async hello"
    assert bedrock.requests[-1].path.endswith("/invoke")


def test_the_fake_refuses_an_unsigned_request_as_bedrock_does(bedrock: FakeBedrockServer) -> None:
    import httpx

    bedrock.reply("never sent")
    answer = httpx.post(f"{bedrock.url}/model/{BEDROCK_MODEL}/invoke", json={"messages": []})
    assert answer.status_code == 403
    assert answer.headers["x-amzn-errortype"].startswith("MissingAuthenticationTokenException")


# --- Bedrock: errors, as on Anthropic's own API ---------------------------------------------------


@pytest.mark.parametrize(
    ("status", "exception", "reason", "retryable"),
    [
        (429, "ThrottlingException", "rate_limited", True),
        (429, "ModelNotReadyException", "overloaded", True),
        (503, "ServiceUnavailableException", "server_error", True),
        (500, "InternalServerException", "server_error", True),
        (403, "AccessDeniedException", "permission", False),
        (403, "UnrecognizedClientException", "auth", False),
        (400, "ValidationException", "invalid_request", False),
        (404, "ResourceNotFoundException", "not_found", False),
    ],
)
def test_bedrock_errors_are_classified_by_their_names(
    bedrock: FakeBedrockServer, status: int, exception: str, reason: str, retryable: bool
) -> None:
    bedrock.fail(status, exception=exception)
    with AnthropicClient(hooks=HOOKS) as client:
        err = _failure(client, _bedrock_request(bedrock.url, settings=NO_RETRY))
    assert err.reason == reason
    assert err.retryable is retryable


def test_bedrock_throttling_is_retried_then_answered(bedrock: FakeBedrockServer) -> None:
    bedrock.fail(429)
    bedrock.reply("after the throttle")
    with AnthropicClient(hooks=HOOKS) as client:
        response = client.generate(_bedrock_request(bedrock.url))
    assert response.text == "after the throttle"
    assert response.attempts == 2


def test_bedrock_input_too_long_is_the_context_window(bedrock: FakeBedrockServer) -> None:
    bedrock.fail(400, message="Input is too long for requested model.")
    with AnthropicClient(hooks=HOOKS) as client:
        err = _failure(client, _bedrock_request(bedrock.url))
    assert err.reason == "context_window"


def test_an_exception_in_bedrocks_stream_is_classified_and_keeps_the_partial_text(
    bedrock: FakeBedrockServer,
) -> None:
    bedrock.fail_midstream("partial answer", error_type="rate_limit_error")
    with AnthropicClient(hooks=HOOKS) as client, pytest.raises(LLMGenerateError) as caught:
        list(client.stream(_bedrock_request(bedrock.url)))
    assert caught.value.reason == "rate_limited"
    assert caught.value.partial_text == "partial answer"


def test_a_bedrock_stream_cut_off_is_a_connection_failure(bedrock: FakeBedrockServer) -> None:
    bedrock.reset_midstream("cut here")
    with AnthropicClient(hooks=HOOKS) as client, pytest.raises(LLMGenerateError) as caught:
        list(client.stream(_bedrock_request(bedrock.url)))
    assert caught.value.reason == "connection"


# --- Bedrock: what is refused or estimated ------------------------------------------------------


def test_bedrock_counts_tokens_by_the_local_estimate_saying_why(engine: Engine) -> None:
    count = engine.count_tokens("greet", inputs={"name": "Ada"})
    assert count.estimated
    assert count.reason is not None
    assert "bedrock" in count.reason


def test_provider_batches_are_refused_on_bedrock_and_vertex(engine: Engine) -> None:
    from scriptorium import RunRequest

    for profile in ("bedrock", "vertex"):
        row = RunRequest(prompt_id="greet", profile=profile, inputs={"name": "Ada"})
        with pytest.raises(errors.InvalidRequestError) as caught:
            engine.submit_batch([row])
        assert "cloud storage" in caught.value.message
        assert profile in caught.value.message


def test_a_key_on_a_bedrock_profile_is_refused_at_prepare(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", "https://bedrock.example", "https://vertex.example")
    (root / "profiles" / "bedrock.yaml").write_text(
        f"provider: anthropic\nmodel: {BEDROCK_MODEL}\napi_key_env: SOME_KEY\n"
        "options: {platform: bedrock, region: us-east-1}\n"
    )
    engine = Engine(root, env={"SOME_KEY": "sk-ant-canary"})
    with pytest.raises(errors.InvalidRequestError) as caught:
        engine.prepare("greet", inputs={"name": "Ada"})
    assert "AWS credentials" in caught.value.message
    assert "sk-ant-canary" not in str(caught.value)


def test_a_bedrock_profile_needs_no_key_variable(engine: Engine) -> None:
    prepared = engine.prepare("greet", inputs={"name": "Ada"})
    assert prepared.target.api_key_env is None


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"platform": "bedrok", "region": "us-east-1"}, "did you mean"),
        ({"platform": "bedrock"}, "options.region is required"),
        ({"platform": "vertex", "region": "us-east5"}, "options.project is required"),
        ({"region": "us-east-1"}, "only with options.platform"),
        ({"platform": "bedrock", "region": "us east 1"}, "not a region name"),
        ({"platform": "vertex", "project": "p", "region": "r1", "aws_profile": "x"}, "not used"),
        (
            {"platform": "vertex", "project": "p", "region": "us-east5", "access_token_env": "x y"},
            "must name an environment variable",
        ),
    ],
)
def test_platform_options_are_checked(options: dict[str, Any], needle: str) -> None:
    problems = option_problems(options)
    assert problems
    assert any(needle in problem for problem in problems)


def test_check_reports_a_bad_platform_option(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", "https://bedrock.example", "https://vertex.example")
    (root / "profiles" / "broken.yaml").write_text(
        "provider: anthropic\nmodel: anthropic.claude-sonnet-4-5-20250929-v1:0\n"
        "options: {platform: bedrock}\n"
    )
    problems = Engine(root).check()
    assert any("options.region is required" in p.message for p in problems)


# --- prepare: platform and region, and the same request hash ------------------------------------


def test_prepare_shows_platform_and_region_and_the_hash_ignores_the_route(
    engine: Engine, tmp_path: Path
) -> None:
    from scriptorium.cli.output import format_prepared

    prepared = engine.prepare("greet", inputs={"name": "Ada"})
    assert prepared.target.platform == "bedrock"
    assert prepared.target.region == "us-east-1"
    shown = format_prepared(prepared)
    assert "platform   bedrock (region us-east-1)" in shown
    vertex = engine.prepare("greet", profile="vertex", inputs={"name": "Ada"})
    assert (vertex.target.platform, vertex.target.region) == ("vertex", "us-east5")
    _no_secret(vertex.model_dump_json(), format_prepared(vertex), repr(vertex))
    # The route is not the request: the same target through another route hashes the same.
    own = prepared.target.model_copy(update={"platform": None, "region": None, "endpoint": None})
    assert own.hash_form() == prepared.target.hash_form()


# --- Vertex -------------------------------------------------------------------------------------


def test_vertex_run_posts_rawpredict_with_the_bearer_token_from_the_options(
    engine: Engine, vertex: FakeVertexServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    vertex.reply("Hi from Vertex", usage={"input_tokens": 1000, "output_tokens": 10})
    result = engine.run("greet", profile="vertex", inputs={"name": "Ada"})
    assert result.output.text == "Hi from Vertex"
    sent = vertex.requests[-1]
    assert sent.path == (
        "/v1/projects/demo-project/locations/us-east5/publishers/anthropic/models/"
        f"{VERTEX_MODEL}:rawPredict"
    )
    assert sent.headers["authorization"] == f"Bearer {VERTEX_TOKEN}"
    assert "x-api-key" not in sent.headers
    assert "model" not in sent.body
    assert sent.body["anthropic_version"]  # the SDK class adds its version member
    assert result.usage.cost_micro == 3000 + 150
    _no_secret(result.model_dump_json(), caplog.text)


def test_vertex_stream_posts_streamrawpredict(engine: Engine, vertex: FakeVertexServer) -> None:
    vertex.reply("streamed from vertex", chunks=5)
    with engine.stream("greet", profile="vertex", inputs={"name": "Ada"}) as stream:
        deltas = [event.text for event in stream if event.type == "text_delta"]
        result = stream.result()
    assert "".join(deltas) == "streamed from vertex"
    assert result.output.text == "streamed from vertex"
    sent = vertex.requests[-1]
    assert sent.path.endswith(f"/models/{VERTEX_MODEL}:streamRawPredict")
    assert sent.body["stream"] is True


def test_vertex_counts_tokens_through_its_counting_model(
    engine: Engine, vertex: FakeVertexServer
) -> None:
    vertex.count_tokens = 42
    count = engine.count_tokens("greet", profile="vertex", inputs={"name": "Ada"})
    assert count.input_tokens == 42
    assert not count.estimated
    sent = vertex.count_requests[-1]
    assert sent.path.endswith("/publishers/anthropic/models/count-tokens:rawPredict")
    assert sent.headers["authorization"] == f"Bearer {VERTEX_TOKEN}"


@pytest.mark.parametrize(
    ("status", "google", "reason"),
    [
        (429, False, "rate_limited"),
        (529, False, "overloaded"),
        (403, True, "permission"),
        (401, True, "auth"),
        (429, True, "rate_limited"),
    ],
)
def test_vertex_errors_are_classified(
    vertex: FakeVertexServer, status: int, google: bool, reason: str
) -> None:
    if google:
        vertex.fail_google(status)
    else:
        vertex.fail(status)
    with AnthropicClient(hooks=HOOKS) as client:
        err = _failure(client, _vertex_request(vertex.url, settings=NO_RETRY))
    assert err.reason == reason


def test_vertex_without_a_token_variable_set_is_a_missing_key(
    tmp_path: Path, vertex: FakeVertexServer
) -> None:
    root = _project(tmp_path / "p", "https://bedrock.example", vertex.url)
    with pytest.raises(errors.APIKeyEnvMissingError) as caught:
        Engine(root, env={}).prepare("greet", profile="vertex", inputs={"name": "Ada"})
    assert "VERTEX_TOKEN" in caught.value.message


def test_verify_goes_through_the_platform(
    engine: Engine, bedrock: FakeBedrockServer, vertex: FakeVertexServer
) -> None:
    bedrock.reply("OK")
    engine.verify("bedrock")
    assert bedrock.requests[-1].path == f"/model/{BEDROCK_MODEL}/invoke"
    vertex.reply("OK")
    engine.verify("vertex")
    assert vertex.requests[-1].path.endswith(":rawPredict")


# --- model ids, the event stream framing ---------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "base"),
    [
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"),
        ("global.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5-20251001"),
        ("apac.anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet-20240620"),
        (
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/"
            "us.anthropic.claude-opus-4-1-20250805-v1:0",
            "claude-opus-4-1-20250805",
        ),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5-20250929"),
        ("claude-sonnet-4-6", "claude-sonnet-4-6"),
    ],
)
def test_platform_model_ids_map_to_the_base_model(model: str, base: str) -> None:
    assert base_model(model) == base


def test_event_stream_frames_decode_across_any_split() -> None:
    events = [
        {"type": "message_start", "message": {"id": "m"}},
        {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "é✓"}},
    ]
    body = b"".join(chunk_message(e) for e in events) + exception_message(
        "throttlingException", "slow down"
    )
    for size in (1, 3, 7, len(body)):
        reader = BedrockEvents()
        got: list[tuple[str | None, str]] = []
        for at in range(0, len(body), size):
            got.extend(reader.feed(body[at : at + size]))
        assert [json.loads(data) for _, data in got[:2]] == events
        name, data = got[2]
        assert name == "error"
        assert json.loads(data)["error"] == {"type": "throttlingException", "message": "slow down"}


def test_a_corrupt_event_stream_frame_is_an_invalid_response() -> None:
    frame = bytearray(chunk_message({"type": "ping"}))
    frame[-6] ^= 0xFF  # a payload byte: the message CRC no longer holds
    with pytest.raises(LLMGenerateError) as caught:
        MessageDecoder().feed(bytes(frame))
    assert caught.value.reason == "invalid_response"
    prelude = bytearray(chunk_message({"type": "ping"}))
    prelude[2] ^= 0x01
    with pytest.raises(LLMGenerateError):
        MessageDecoder().feed(bytes(prelude))


def test_the_fakes_encoder_writes_the_published_framing() -> None:
    # Written by hand from the framing's description, independently of both codecs.
    headers = {":event-type": "chunk"}
    payload = b'{"bytes":"' + base64.b64encode(b"{}") + b'"}'
    raw_headers = b"\x0b:event-type\x07\x00\x05chunk"
    total = 12 + len(raw_headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw_headers))
    head = prelude + struct.pack(">I", zlib.crc32(prelude)) + raw_headers + payload
    assert encode_message(headers, payload) == head + struct.pack(">I", zlib.crc32(head))
    (message,) = MessageDecoder().feed(encode_message(headers, payload))
    assert message.headers == headers
    assert message.payload == payload


# --- a credential chain that finds nothing --------------------------------------------------------


def test_vertex_without_a_token_or_default_credentials_is_an_auth_failure(
    vertex: FakeVertexServer,
) -> None:
    # No access token: AnthropicVertex asks google-auth, which finds no credentials file.
    request = _vertex_request(vertex.url, api_key=None)
    with AnthropicClient(hooks=HOOKS) as client:
        err = _failure(client, request)
    assert err.reason == "auth"
    assert not err.retryable
    assert vertex.requests == []


def test_bedrock_without_aws_credentials_is_an_auth_failure(
    bedrock: FakeBedrockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    # A region no other test uses: the SDK caches one AWS session per region and profile.
    request = _bedrock_request(bedrock.url, options={"platform": "bedrock", "region": "eu-west-3"})
    with AnthropicClient(hooks=HOOKS) as client:
        err = _failure(client, request)
    assert err.reason == "auth"
    assert bedrock.requests == []


def test_bedrock_without_aws_credentials_says_what_to_do(
    bedrock: FakeBedrockServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing in AWS's credential chain: an ``auth`` failure before any request, with a hint."""
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    root = _project(tmp_path / "p", bedrock.url, "https://vertex.example")
    # A region no other test uses: SDK clients are reused per route, credentials and all.
    (root / "profiles" / "bedrock.yaml").write_text(
        f"provider: anthropic\nmodel: {BEDROCK_MODEL}\nendpoint: {bedrock.url}\n"
        "allow_insecure_http: true\noptions: {platform: bedrock, region: ap-south-2}\n"
    )
    with pytest.raises(LLMGenerateError) as caught:
        Engine(root, env={}).run("greet", inputs={"name": "Ada"})
    assert caught.value.reason == "auth"
    assert "aws configure" in caught.value.message
    assert "options.aws_profile" in caught.value.message
    assert bedrock.requests == []
