"""What a gateway in front of a provider does, reproduced by the loopback servers and met through
the real SDKs: a counting route that answers 404 or 500, its own request id and cost headers, a
forced tool call's finish reason, and batch routes it does not serve."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from scriptorium import Engine, Overrides, RunRequest, errors
from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium._testing.http import Answer, RecordedRequest
from scriptorium._testing.openai_server import FakeOpenAIServer
from scriptorium.llm.batches.calls import BatchCalls
from scriptorium.llm.model import Failure
from scriptorium.llm.retry import RetryHooks

KEY = "sk-gateway-test-key-0000"
SCHEMA = {
    "type": "object",
    "required": ["label"],
    "properties": {"label": {"enum": ["positive", "negative"]}},
}


def _project(root: Path, anthropic_url: str, openai_url: str) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "greet.prompt.md").write_text("---\nprofile: claude\n---\nHello!\n")
    (root / "prompts" / "label.prompt.md").write_text(
        "---\nprofile: gpt\noutput:\n  format: json_schema\n"
        f"  schema: {json.dumps(SCHEMA)}\n  strategy: tool\n---\nLabel it.\n"
    )
    (root / "profiles" / "claude.yaml").write_text(
        f"provider: anthropic\nmodel: claude-sonnet-4-6\nendpoint: {anthropic_url}\n"
        "api_key_env: GW_KEY\n"
    )
    (root / "profiles" / "gpt.yaml").write_text(
        f"provider: openai\nmodel: gpt-4.1-mini\nendpoint: {openai_url}\napi_key_env: GW_KEY\n"
    )
    return root


class Servers:
    def __init__(self, anthropic: FakeAnthropicServer, openai: FakeOpenAIServer) -> None:
        self.anthropic = anthropic
        self.openai = openai


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    with FakeAnthropicServer() as anthropic, FakeOpenAIServer() as openai:
        yield Servers(anthropic, openai)


@pytest.fixture
def engine(servers: Servers, tmp_path: Path) -> Engine:
    servers.anthropic.reset()
    servers.anthropic.count_tokens_status = None
    servers.anthropic.count_tokens = None
    servers.anthropic.count_requests.clear()
    servers.openai.reset()
    root = _project(tmp_path / "project", servers.anthropic.url, servers.openai.url)
    return Engine(root, env={"GW_KEY": KEY}, retry_hooks=RetryHooks(sleep=lambda s: None))


@pytest.mark.parametrize("status", [404, 405, 500, 501])
def test_a_counting_route_the_endpoint_lacks_falls_back_to_the_estimate_with_the_reason(
    engine: Engine, servers: Servers, status: int
) -> None:
    servers.anthropic.count_tokens_status = status
    count = engine.count_tokens("greet")
    assert count.estimated
    assert count.input_tokens > 0
    assert count.reason is not None
    assert f"HTTP {status}" in count.reason
    assert servers.anthropic.url in count.reason
    # Asked once: an endpoint that cannot count is not asked again.
    assert len(servers.anthropic.count_requests) == 1


def test_a_count_that_works_is_not_an_estimate(engine: Engine, servers: Servers) -> None:
    servers.anthropic.count_tokens = 42
    count = engine.count_tokens("greet")
    assert (count.input_tokens, count.estimated, count.reason) == (42, False, None)


def test_a_bad_key_while_counting_still_fails(engine: Engine, servers: Servers) -> None:
    servers.anthropic.count_tokens_status = 401
    with pytest.raises(errors.LLMGenerateError) as info:
        engine.count_tokens("greet")
    assert info.value.reason == "auth"


def test_prepare_count_tokens_says_why_it_estimated(
    servers: Servers, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from scriptorium.cli import main

    servers.anthropic.count_tokens_status = 404
    root = _project(tmp_path / "p", servers.anthropic.url, servers.openai.url)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GW_KEY", KEY)
        assert main(["prepare", "greet", "--root", str(root), "--count-tokens"]) == 0
        assert main(["prepare", "greet", "--root", str(root), "--count-tokens", "--json"]) == 0
    text, data = capsys.readouterr().out.split("\n{", 1)
    assert "estimated locally:" in text
    assert "answered HTTP 404" in text
    count = json.loads("{" + data)["token_count"]
    assert count["estimated"] is True
    assert "HTTP 404" in count["reason"]
    servers.anthropic.count_tokens_status = None


def test_a_gateway_request_id_stands_in_when_the_provider_sends_none(
    engine: Engine, servers: Servers
) -> None:
    servers.openai.reply(
        '{"label": "positive"}',
        headers={
            "x-request-id": "",  # left out: the gateway sends only its own id
            "x-litellm-call-id": "gw-call-1",
            "x-litellm-response-cost": "0.00125",
        },
    )
    result = engine.run(RunRequest(prompt_id="label", overrides=Overrides()))
    assert result.metadata["request_id"] == "gw-call-1"
    assert result.metadata["request_id_header"] == "x-litellm-call-id"
    # The gateway's figure as reported, next to (never instead of) scriptorium's own.
    assert result.metadata["gateway_cost"] == {"header": "x-litellm-response-cost", "usd": 0.00125}
    assert result.usage.cost_micro > 0


def test_the_providers_own_request_id_wins_over_a_gateways(
    engine: Engine, servers: Servers
) -> None:
    servers.openai.reply(
        '{"label": "positive"}', headers={"x-request-id": "req-own", "x-litellm-call-id": "gw"}
    )
    result = engine.run("label")
    assert result.metadata["request_id"] == "req-own"
    assert "request_id_header" not in result.metadata
    servers.anthropic.reply("hi", headers={"x-litellm-call-id": "gw-2", "x-request-id": "x"})
    answered = engine.run("greet")
    assert answered.metadata["request_id"].startswith("req_fake_")  # Anthropic's request-id
    assert "gateway_cost" not in answered.metadata


def test_a_gateway_cost_reaches_the_anthropic_adapter_too(engine: Engine, servers: Servers) -> None:
    servers.anthropic.reply("hi", headers={"x-litellm-response-cost": "not a number"})
    result = engine.run("greet")
    assert result.metadata["gateway_cost"] == {
        "header": "x-litellm-response-cost",
        "usd": "not a number",
    }


@pytest.mark.parametrize("reported", ["tool_calls", "stop"])
def test_a_forced_tool_call_finishes_with_stop_whatever_the_route_says(
    engine: Engine, servers: Servers, reported: str
) -> None:
    servers.openai.reply_tool('{"label": "negative"}', finish_reason=reported)
    result = engine.run("label")
    assert result.validation.value == {"label": "negative"}
    assert result.finish_reason == "stop"


def test_the_anthropic_forced_tool_call_finishes_with_stop_too(
    engine: Engine, servers: Servers
) -> None:
    servers.anthropic.reply_tool({"label": "positive"}, stop_reason="tool_use")
    result = engine.run(
        RunRequest(prompt_id="label", profile="claude", overrides=Overrides(model="claude-x"))
    )
    assert result.finish_reason == "stop"
    assert result.validation.value == {"label": "positive"}


class NoBatchRoutes(FakeAnthropicServer):
    """A gateway that serves messages but not the Message Batches routes (answers ``status``)."""

    def __init__(self, status: int) -> None:
        super().__init__()
        self.status = status
        self.batch_calls = 0

    def route(self, request: RecordedRequest) -> Answer | None:
        if "/batches" not in request.path:
            return None
        self.batch_calls += 1
        return Answer.json({"detail": "Not Found"}, status=self.status)


@pytest.mark.parametrize("status", [404, 500])
def test_a_provider_batch_through_a_gateway_without_batch_routes_fails_once_naming_the_model(
    tmp_path: Path, status: int
) -> None:
    with NoBatchRoutes(status) as gateway:
        root = _project(tmp_path / "p", gateway.url, "http://127.0.0.1:9")
        engine = Engine(root, env={"GW_KEY": KEY}, retry_hooks=RetryHooks(sleep=lambda s: None))
        with pytest.raises(errors.LLMGenerateError) as info:
            engine.submit_batch([RunRequest(prompt_id="greet")]).wait(poll_s=0.01)
    message = str(info.value)
    assert "claude-sonnet-4-6" in message
    assert "has no batch API" in message
    assert f"HTTP {status}" in message
    assert (info.value.reason, info.value.retryable) == ("config", False)
    assert gateway.batch_calls == 1  # once: no server_error retries


def test_the_providers_own_api_still_retries_a_500_on_its_batch_routes() -> None:
    """A 500 from the provider itself (its default base URL) is a server error, retried; only a
    gateway's 500 means a missing route. Checked on the rule, without a network."""
    seen: list[int] = []

    class Boom(Exception):
        pass

    def classify(err: BaseException) -> Failure:
        return Failure("server_error", True, http_status=500)

    calls = BatchCalls(
        provider="anthropic",
        key=KEY,
        classify=classify,
        hooks=RetryHooks(sleep=lambda s: None),
        model="m",
    )

    def attempt(timeout_s: float) -> int:
        seen.append(1)
        raise Boom

    with pytest.raises(errors.LLMGenerateError) as info:
        calls.read(attempt)
    assert info.value.reason == "server_error"
    assert len(seen) == 3


def test_a_streamed_answer_keeps_the_gateway_headers_too(engine: Engine, servers: Servers) -> None:
    cost = {"x-litellm-response-cost": "0.5"}
    servers.anthropic.reply("streamed", chunks=3, headers=cost)
    with engine.stream("greet") as stream:
        list(stream)
        anthropic = stream.result()
    assert anthropic.metadata["gateway_cost"] == {"header": "x-litellm-response-cost", "usd": 0.5}
    servers.openai.reply(
        '{"label": "positive"}',
        chunks=3,
        headers={**cost, "x-request-id": "", "x-litellm-call-id": "s"},
    )
    with engine.stream("label") as stream:
        list(stream)
        openai = stream.result()
    assert openai.metadata["request_id"] == "s"
    assert openai.metadata["gateway_cost"]["usd"] == 0.5
