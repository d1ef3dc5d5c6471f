"""OpenAI's models on Azure: the openai provider's ``platform: azure`` option, through the real
``AzureOpenAI`` class against the loopback fake of an Azure OpenAI resource, with a fake key
(``api-key`` header) or a fake Microsoft Entra token (``Authorization: Bearer``).

Asserted: the deployment path and its ``api-version``, the auth header, the body on the wire,
streamed and not; the Files and Batch API under the resource's ``/openai``; pricing by the model
Azure reports; errors classified as on OpenAI's own API; no key or token in any output form."""

from __future__ import annotations

import asyncio
import logging
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scriptorium import Engine, RunRequest, RunResult, errors
from scriptorium._testing.azure_server import FakeAzureOpenAIServer
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import LLMRequest, LLMResponse, Target, Usage
from scriptorium.llm.openai.azure import option_problems
from scriptorium.llm.openai.call import azure_cost
from scriptorium.llm.openai.client import OpenAIClient
from scriptorium.llm.retry import RetryHooks
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message

KEY = "azure-key-canary-0e6b2d94f1a7"
TOKEN = "eyJ0eXAi.entra-token-canary-93ac51"
DEPLOYMENT = "chat-prod"
API_VERSION = "2024-10-21"


async def _no_sleep(_seconds: float) -> None:
    return None


HOOKS = RetryHooks(sleep=lambda _s: None, asleep=_no_sleep, jitter=lambda _lo, _hi: 1.0)
NO_RETRY = ExecutionSettings(max_retries=0)


@pytest.fixture(autouse=True)
def no_azure_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The SDK would read these when given no credential of its own: none may be consulted.
    for name in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN", "OPENAI_API_VERSION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeAzureOpenAIServer]:
    with FakeAzureOpenAIServer(deployments={DEPLOYMENT: "gpt-4o-2024-08-06"}) as server:
        yield server


@pytest.fixture
def server(shared_server: FakeAzureOpenAIServer) -> FakeAzureOpenAIServer:
    shared_server.clear()
    return shared_server


def _project(root: Path, url: str) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "greet.prompt.md").write_text(
        "---\nprofile: azure\n---\nSay hello to {{ name }}.\n"
    )
    common = f"provider: openai\nmodel: {DEPLOYMENT}\nendpoint: {url}\nallow_insecure_http: true\n"
    (root / "profiles" / "azure.yaml").write_text(
        common
        + f"api_key_env: AZ_KEY\noptions: {{platform: azure, api_version: '{API_VERSION}'}}\n"
    )
    (root / "profiles" / "entra.yaml").write_text(
        common + f"options: {{platform: azure, api_version: '{API_VERSION}', "
        "azure_ad_token_env: AZ_TOKEN}\n"
    )
    return root


@pytest.fixture
def engine(tmp_path: Path, server: FakeAzureOpenAIServer) -> Engine:
    root = _project(tmp_path / "project", server.url)
    return Engine(root, env={"AZ_KEY": KEY, "AZ_TOKEN": TOKEN}, retry_hooks=HOOKS)


def _no_secret(*texts: str) -> None:
    for text in texts:
        assert KEY not in text
        assert TOKEN not in text


def _request(url: str, **fields: Any) -> LLMRequest:
    base: dict[str, Any] = {
        "target": Target(provider="openai", model=DEPLOYMENT, endpoint=url, api_key_env="AZ_KEY"),
        "api_key": KEY,
        "messages": (Message(role="user", content="Hello"),),
        "options": {"platform": "azure", "api_version": API_VERSION},
    }
    base.update(fields)
    return LLMRequest(**base)


def _failure(request: LLMRequest) -> LLMGenerateError:
    with OpenAIClient(hooks=HOOKS) as client, pytest.raises(LLMGenerateError) as caught:
        client.generate(request)
    err = caught.value
    _no_secret(str(err), repr(err), pickle.dumps(err).decode("latin-1"))
    return err


# --- the wire -----------------------------------------------------------------------------------


def test_a_run_posts_to_the_deployment_with_the_api_key_header(
    engine: Engine, server: FakeAzureOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.reply("Hello, Ada!", prompt_tokens=1000, completion_tokens=100)
    result = engine.run("greet", inputs={"name": "Ada"})
    assert result.output.text == "Hello, Ada!"
    sent = server.requests[-1]
    assert sent.path == (
        f"/openai/deployments/{DEPLOYMENT}/chat/completions?api-version={API_VERSION}"
    )
    assert sent.headers["api-key"] == KEY
    assert "authorization" not in sent.headers
    assert sent.body["model"] == DEPLOYMENT
    assert sent.body["messages"] == [{"role": "user", "content": "Say hello to Ada."}]
    assert "max_completion_tokens" in sent.body  # Azure serves OpenAI's own models
    # Priced by the model Azure reports the deployment serves (gpt-4o: $2.50 in, $10 out).
    assert result.usage.cost_micro == 2500 + 1000
    _no_secret(result.model_dump_json(), caplog.text)


def test_an_entra_token_travels_as_a_bearer_token(
    engine: Engine, server: FakeAzureOpenAIServer
) -> None:
    server.reply("Hi")
    engine.run("greet", profile="entra", inputs={"name": "Ada"})
    sent = server.requests[-1]
    assert sent.headers["authorization"] == f"Bearer {TOKEN}"
    assert "api-key" not in sent.headers
    prepared = engine.prepare("greet", profile="entra", inputs={"name": "Ada"})
    assert prepared.target.platform == "azure"
    _no_secret(prepared.model_dump_json(), repr(prepared))


def test_a_stream_goes_to_the_deployment(engine: Engine, server: FakeAzureOpenAIServer) -> None:
    server.reply("streamed from azure", chunks=4)
    with engine.stream("greet", inputs={"name": "Ada"}) as stream:
        deltas = [event.text for event in stream if event.type == "text_delta"]
        result = stream.result()
    assert "".join(deltas) == "streamed from azure"
    assert result.output.text == "streamed from azure"
    sent = server.requests[-1]
    assert sent.path.startswith(f"/openai/deployments/{DEPLOYMENT}/chat/completions?")
    assert sent.body["stream"] is True
    assert sent.headers["api-key"] == KEY


def test_async_generate(server: FakeAzureOpenAIServer) -> None:
    server.reply("async azure")

    async def once() -> LLMResponse:
        async with OpenAIClient(hooks=HOOKS) as client:
            return await client.agenerate(_request(server.url))

    assert asyncio.run(once()).text == "async azure"
    assert server.requests[-1].headers["api-key"] == KEY


def test_verify_goes_to_the_deployment(engine: Engine, server: FakeAzureOpenAIServer) -> None:
    server.reply("OK")
    engine.verify("azure")
    assert server.requests[-1].path.startswith(f"/openai/deployments/{DEPLOYMENT}/")


def test_count_tokens_is_the_local_estimate(engine: Engine) -> None:
    count = engine.count_tokens("greet", inputs={"name": "Ada"})
    assert count.estimated
    assert count.input_tokens > 0


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "reason", "retryable"),
    [
        (429, "rate_limited", True),
        (500, "server_error", True),
        (401, "auth", False),
        (403, "permission", False),
        (400, "invalid_request", False),
        (404, "not_found", False),
    ],
)
def test_errors_are_classified_as_on_openais_api(
    server: FakeAzureOpenAIServer, status: int, reason: str, retryable: bool
) -> None:
    server.fail(status)
    err = _failure(_request(server.url, settings=NO_RETRY))
    assert err.reason == reason
    assert err.retryable is retryable


def test_a_429_is_retried(server: FakeAzureOpenAIServer) -> None:
    server.fail(429)
    server.reply("after the limit")
    with OpenAIClient(hooks=HOOKS) as client:
        response = client.generate(_request(server.url))
    assert response.text == "after the limit"
    assert response.attempts == 2


def test_the_fake_refuses_what_azure_refuses(server: FakeAzureOpenAIServer) -> None:
    import httpx

    path = f"{server.url}/openai/deployments/{DEPLOYMENT}/chat/completions"
    assert httpx.post(path, json={}, headers={"api-key": "k"}).status_code == 404
    assert httpx.post(f"{path}?api-version={API_VERSION}", json={}).status_code == 401


# --- profiles refused before any call -------------------------------------------------------------


def test_an_azure_profile_needs_its_resource_endpoint(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", "https://example.openai.azure.com")
    (root / "profiles" / "azure.yaml").write_text(
        f"provider: openai\nmodel: {DEPLOYMENT}\napi_key_env: AZ_KEY\n"
        f"options: {{platform: azure, api_version: '{API_VERSION}'}}\n"
    )
    with pytest.raises(errors.InvalidRequestError) as caught:
        Engine(root, env={"AZ_KEY": KEY}).prepare("greet", inputs={"name": "Ada"})
    assert "endpoint" in caught.value.message
    _no_secret(str(caught.value))


def test_the_resource_endpoint_from_the_sdks_variable(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", "https://example.openai.azure.com")
    (root / "profiles" / "azure.yaml").write_text(
        f"provider: openai\nmodel: {DEPLOYMENT}\napi_key_env: AZ_KEY\n"
        f"options: {{platform: azure, api_version: '{API_VERSION}'}}\n"
    )
    env = {"AZ_KEY": KEY, "AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com"}
    prepared = Engine(root, env=env).prepare("greet", inputs={"name": "Ada"})
    assert prepared.target.endpoint == "https://res.openai.azure.com"
    assert prepared.target.endpoint_source == "env"


def test_a_key_and_a_token_together_are_refused(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", "https://example.openai.azure.com")
    (root / "profiles" / "azure.yaml").write_text(
        f"provider: openai\nmodel: {DEPLOYMENT}\nendpoint: https://example.openai.azure.com\n"
        f"api_key_env: AZ_KEY\noptions: {{platform: azure, api_version: '{API_VERSION}', "
        "azure_ad_token_env: AZ_TOKEN}\n"
    )
    with pytest.raises(errors.InvalidRequestError) as caught:
        Engine(root, env={"AZ_KEY": KEY, "AZ_TOKEN": TOKEN}).prepare(
            "greet", inputs={"name": "Ada"}
        )
    assert "not both" in caught.value.message


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"platform": "azure"}, "api_version is required"),
        ({"platform": "azur", "api_version": API_VERSION}, "did you mean"),
        ({"api_version": API_VERSION}, "only with options.platform"),
        (
            {"platform": "azure", "api_version": API_VERSION, "azure_ad_token_env": "not a var"},
            "must name an environment variable",
        ),
    ],
)
def test_azure_options_are_checked(options: dict[str, Any], needle: str) -> None:
    assert any(needle in problem for problem in option_problems(options))


# --- pricing ------------------------------------------------------------------------------------


def test_pricing_falls_back_to_base_model_then_to_zero_with_a_note() -> None:
    usage = Usage(input_tokens=1000, output_tokens=100)
    request = _request("https://r.openai.azure.com")
    assert azure_cost(request, usage, "gpt-4o-2024-08-06") == (3500, None)
    based = _request(
        "https://r.openai.azure.com",
        options={"platform": "azure", "api_version": API_VERSION, "base_model": "gpt-4o"},
    )
    assert azure_cost(based, usage, None)[0] == 3500
    cost, note = azure_cost(request, usage, None)
    assert cost == 0
    assert note is not None
    assert "base_model" in note


# --- the Batch API --------------------------------------------------------------------------------


def test_provider_batch_uses_files_and_batches_under_the_resource(
    engine: Engine, server: FakeAzureOpenAIServer
) -> None:
    rows = [RunRequest(prompt_id="greet", inputs={"name": n}) for n in ("Ada", "Alan", "Ada")]
    results = engine.submit_batch(rows).wait(0.01).results()
    assert all(isinstance(r, RunResult) for r in results), results
    posts = [r for r in server.requests if r.method == "POST"]
    assert [r.path.split("?")[0] for r in posts] == ["/openai/files", "/openai/batches"]
    assert all(f"api-version={API_VERSION}" in r.path for r in server.requests)
    assert all(r.headers.get("api-key") == KEY for r in server.requests)
    upload, create = posts
    assert upload.raw.count(b'"custom_id"') == 2
    assert b'"url": "/chat/completions"' in upload.raw or b'"url":"/chat/completions"' in upload.raw
    assert create.body["endpoint"] == "/chat/completions"
    for result in results:
        assert isinstance(result, RunResult)
        assert result.metadata["service_tier"] == "batch"
        assert result.usage.cost_micro > 0  # priced by the reported model, at the batch rate
        _no_secret(result.model_dump_json())


# --- the Responses API on Azure ------------------------------------------------------------------


def test_the_responses_api_goes_to_the_resources_responses_route(
    server: FakeAzureOpenAIServer,
) -> None:
    """On Azure the Responses API is ``/openai/responses`` with the api-version, the deployment
    named by the body's model; the answer is priced by the model Azure reports."""
    server.reply("from responses", prompt_tokens=1000, completion_tokens=100)
    options = {"platform": "azure", "api_version": API_VERSION, "api": "responses"}
    request = _request(server.url, options=options)
    with OpenAIClient(hooks=HOOKS) as client:
        response = client.generate(request)
    sent = server.requests[-1]
    assert sent.path.startswith("/openai/responses?api-version=")
    assert sent.headers["api-key"] == KEY
    assert sent.body["model"] == DEPLOYMENT
    assert sent.body["store"] is False
    assert response.text == "from responses"
    assert response.model == "gpt-4o-2024-08-06"
    assert response.usage.cost_micro > 0


# --- what recordings of Azure show ------------------------------------------------------------


def test_a_stream_takes_its_model_from_the_first_chunk_that_names_one(
    engine: Engine, server: FakeAzureOpenAIServer
) -> None:
    """Azure opens every stream with a chunk of prompt filter results and ``"model": ""``: the
    stream's model (and price) is the first one a chunk names, as unstreamed."""
    server.reply("streamed", prompt_tokens=1000, completion_tokens=100, chunks=3)
    with engine.stream("greet", inputs={"name": "Ada"}) as stream:
        streamed = stream.result()
    server.reply("streamed", prompt_tokens=1000, completion_tokens=100)
    plain = engine.run("greet", inputs={"name": "Ada"})
    assert streamed.model == plain.model == "gpt-4o-2024-08-06"
    assert streamed.usage.cost_micro == plain.usage.cost_micro == 2500 + 1000
    assert streamed.metadata["pricing"] is None


def test_a_prompt_the_content_filter_blocked_is_a_content_filter_failure(
    server: FakeAzureOpenAIServer,
) -> None:
    server.filter_prompt()
    err = _failure(_request(server.url))
    assert (err.reason, err.retryable, err.http_status) == ("content_filter", False, 400)
    assert len(server.requests) == 1  # not retried


def test_a_filtered_prompt_exits_6_and_does_not_fall_back_by_default(
    tmp_path: Path, server: FakeAzureOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from scriptorium.cli import main

    root = _project(tmp_path / "project", server.url)
    profile = root / "profiles" / "azure.yaml"
    profile.write_text(profile.read_text() + "fallback: [entra]\n")
    server.filter_prompt()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AZ_KEY", KEY)
        patch.setenv("AZ_TOKEN", TOKEN)
        code = main(["run", "greet", "--root", str(root), "--input", "name=Ada"])
    assert code == 6
    assert "content_filter" in capsys.readouterr().err
    assert len(server.requests) == 1  # the fallback profile was not tried
