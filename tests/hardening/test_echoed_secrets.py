"""Every secret a request carried stays out of a *successful* answer as well as out of errors: a
server that echoes the key (or a route's signing credential) in its model name, response id or
request-id header gets it into no ``RunResult``, pickle, stream result or error."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest

from scriptorium import Engine, RunRequest, RunResult
from scriptorium._testing.bedrock_server import FakeBedrockServer
from scriptorium._testing.openai_server import FakeOpenAIServer
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.anthropic import AnthropicClient
from scriptorium.llm.model import LLMRequest, LLMResponse, Target
from scriptorium.llm.openai import OpenAIClient
from scriptorium.llm.retry import RetryHooks
from scriptorium.llm.secrets import REDACTED, scrub_response
from scriptorium.prompt.model import Message
from scriptorium.testing import FakeClient
from scriptorium.usecase.events import TextDelta

OPENAI_KEY = "gw-token-echo-3f9a1c77e2d4"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEcanarySessionToken0987"
HOOKS = RetryHooks(sleep=lambda _s: None, jitter=lambda _lo, _hi: 1.0)


def _project(root: Path, openai_url: str, bedrock_url: str) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "say.prompt.md").write_text("---\nprofile: gateway\n---\nSay hi.\n")
    (root / "profiles" / "gateway.yaml").write_text(
        f"provider: openai\nmodel: gpt-4o-mini\nendpoint: {openai_url}\napi_key_env: GATEWAY_KEY\n"
    )
    (root / "profiles" / "bedrock.yaml").write_text(
        "provider: anthropic\nmodel: anthropic.claude-3-haiku-20240307-v1:0\n"
        f"endpoint: {bedrock_url}\nallow_insecure_http: true\n"
        "options: {platform: bedrock, region: eu-west-1}\n"
    )
    return root


@pytest.fixture(scope="module")
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def bedrock_server() -> Iterator[FakeBedrockServer]:
    with FakeBedrockServer(default_text=None) as server:
        yield server


@pytest.fixture
def engine(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    openai_server: FakeOpenAIServer,
    bedrock_server: FakeBedrockServer,
) -> Engine:
    openai_server.reset()
    bedrock_server.reset()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEECHOTEST0001")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "echo-secret-access-key-5521")
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("ANTHROPIC_BEDROCK_BASE_URL", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    root = _project(tmp_path / "p", openai_server.url, bedrock_server.url)
    return Engine(root, env={"GATEWAY_KEY": OPENAI_KEY}, retry_hooks=HOOKS)


def _seen(value: object) -> str:
    """Everything a caller can get out of ``value``: its JSON or str, its repr and its pickle."""
    dumped = value.model_dump_json() if hasattr(value, "model_dump_json") else str(value)
    return dumped + repr(value) + pickle.dumps(value).decode("latin-1")


@pytest.mark.parametrize("stream", [False, True])
def test_a_key_echoed_in_model_and_request_id_is_in_no_result(
    engine: Engine, openai_server: FakeOpenAIServer, stream: bool
) -> None:
    openai_server.reply(
        "hi",
        model=f"proxy/{OPENAI_KEY}/gpt-4o-mini",
        headers={"x-request-id": f"req-{OPENAI_KEY}"},
    )
    request = RunRequest(prompt_id="say")
    if stream:
        events = list(engine.stream(request))
        assert OPENAI_KEY not in "".join(_seen(event) for event in events)
        result = events[-1].result  # type: ignore[union-attr]
    else:
        result = engine.run(request)
    assert isinstance(result, RunResult)
    seen = _seen(result)
    assert OPENAI_KEY not in seen
    assert REDACTED in result.model
    assert result.attempts[-1].model == result.model


@pytest.mark.parametrize("stream", [False, True])
def test_a_bedrock_session_token_echoed_in_an_error_is_in_no_message(
    engine: Engine, bedrock_server: FakeBedrockServer, stream: bool
) -> None:
    bedrock_server.fail(
        403,
        exception="AccessDeniedException",
        message=f"token {SESSION_TOKEN} is not allowed here",
    )
    request = RunRequest(prompt_id="say", profile="bedrock")

    def attempt() -> object:
        return list(engine.stream(request)) if stream else engine.run(request)

    with pytest.raises(LLMGenerateError) as caught:
        attempt()
    err = caught.value
    assert SESSION_TOKEN not in str(err) + repr(err) + pickle.dumps(err).decode("latin-1")
    assert SESSION_TOKEN not in err.message
    assert err.reason == "permission"


def test_a_bedrock_session_token_echoed_in_the_model_is_in_no_result(
    engine: Engine, bedrock_server: FakeBedrockServer
) -> None:
    bedrock_server.reply("hello", model=f"echo-{SESSION_TOKEN}")
    result = engine.run(RunRequest(prompt_id="say", profile="bedrock"))
    assert SESSION_TOKEN not in _seen(result)


def test_a_custom_client_echoing_the_callers_key_is_scrubbed_at_the_boundary(
    tmp_path: Path, openai_server: FakeOpenAIServer, bedrock_server: FakeBedrockServer
) -> None:
    key = "caller-key-value-81726354"
    echoed = LLMResponse(
        text="fine",
        model=f"m-{key}",
        metadata={"request_id": key, "nested": [{"id": f"x{key}y"}]},
    )
    root = _project(tmp_path / "p", openai_server.url, bedrock_server.url)
    engine = Engine(root, client=FakeClient([echoed]), env={"GATEWAY_KEY": "unused-key-1234"})
    result = engine.run(RunRequest(prompt_id="say", api_key=key))
    assert key not in _seen(result)
    assert result.output.text == "fine"


def test_placeholders_shorter_than_eight_characters_are_left_alone() -> None:
    response = LLMResponse(text="EMPTY ollama", model="ollama/llama3", metadata={"id": "EMPTY"})
    assert scrub_response(response, ["ollama", "EMPTY", None, ""]) is response
    long = scrub_response(response, ["ollama/llama3"])
    assert long.model == REDACTED
    assert long.metadata == {"id": "EMPTY"}


def test_a_session_token_in_a_bedrock_exception_mid_stream_is_in_no_error(
    engine: Engine, bedrock_server: FakeBedrockServer
) -> None:
    bedrock_server.fail_midstream(
        "partial words ", error_type="api_error", message=f"lost {SESSION_TOKEN} here"
    )
    request = RunRequest(prompt_id="say", profile="bedrock")
    with pytest.raises(LLMGenerateError) as caught:
        list(engine.stream(request))
    err = caught.value
    assert err.partial_text == "partial words "
    assert SESSION_TOKEN not in str(err) + repr(err) + pickle.dumps(err).decode("latin-1")


@pytest.mark.parametrize("stream", [False, True])
def test_the_adapter_itself_hands_out_no_echoed_key(
    openai_server: FakeOpenAIServer, stream: bool
) -> None:
    """What a cassette recorder or a batch sees is the adapter's answer: already scrubbed."""
    openai_server.reset()
    openai_server.reply(
        "hi", model=f"m-{OPENAI_KEY}", headers={"x-request-id": f"id-{OPENAI_KEY}-x"}
    )
    request = LLMRequest(
        target=Target(provider="openai", model="gpt-4o-mini", endpoint=openai_server.url),
        api_key=OPENAI_KEY,
        messages=(Message(role="user", content="hi"),),
    )
    with OpenAIClient(hooks=HOOKS) as client:
        if stream:
            items = list(client.stream(request))
            response = items[-1]
        else:
            response = client.generate(request)
    assert isinstance(response, LLMResponse)
    assert OPENAI_KEY not in response.model_dump_json()
    assert response.metadata["request_id"] == f"id-{REDACTED}-x"


def test_the_bedrock_adapter_itself_scrubs_its_session_token_mid_stream(
    engine: Engine, bedrock_server: FakeBedrockServer
) -> None:
    """The adapter's own stream error, before any run's boundary sees it."""
    bedrock_server.fail_midstream("some ", error_type="api_error", message=f"at {SESSION_TOKEN}")
    request = LLMRequest(
        target=Target(
            provider="anthropic",
            model="anthropic.claude-3-haiku-20240307-v1:0",
            endpoint=bedrock_server.url,
        ),
        messages=(Message(role="user", content="hi"),),
        options={"platform": "bedrock", "region": "eu-west-1"},
    )
    with AnthropicClient(hooks=HOOKS) as client, pytest.raises(LLMGenerateError) as caught:
        list(client.stream(request))
    err = caught.value
    assert err.partial_text == "some "
    assert SESSION_TOKEN not in str(err) + repr(err) + pickle.dumps(err).decode("latin-1")


@pytest.mark.parametrize("chunks", [2, 5, 23])
def test_a_key_echoed_in_the_answer_is_in_no_delta_however_it_is_cut(
    tmp_path: Path, openai_server: FakeOpenAIServer, bedrock_server: FakeBedrockServer, chunks: int
) -> None:
    """The deltas a caller reads as they come carry no secret, also one the client cut across
    two deltas: the joined deltas are the final, scrubbed text."""
    key = "caller-key-value-81726354"
    echoed = LLMResponse(text=f"your key is {key}, keep it", model="m")
    root = _project(tmp_path / "p", openai_server.url, bedrock_server.url)
    client = FakeClient([echoed], chunks=chunks)
    engine = Engine(root, client=client, env={"GATEWAY_KEY": "unused-key-1234"})
    events = list(engine.stream(RunRequest(prompt_id="say", api_key=key)))
    deltas = [event.text for event in events if isinstance(event, TextDelta)]
    result = events[-1].result  # type: ignore[union-attr]
    assert key not in "".join(deltas)
    assert "".join(deltas) == result.output.text == f"your key is {REDACTED}, keep it"
