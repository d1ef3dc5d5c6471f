"""scriptorium through its real adapters (the official SDKs) against the LiteLLM proxy, a gateway
nobody on the team wrote, on both of its routes: OpenAI's Chat Completions and Anthropic's
Messages. Text, each structured-output strategy, streaming, LiteLLM's error translations, token
counting, verify, the gateway's request id and cost, and a provider batch it cannot serve."""

from __future__ import annotations

import asyncio

import pytest

from scriptorium import Engine, Overrides, RunRequest, TextDelta, errors
from scriptorium.llm.retry import RetryHooks
from tests.compat.conftest import KEY_ENV, MASTER_KEY, TEXT, Gateway

# A proxy process per session (about 15 s to start): with the slow tests, in `make ci`.
pytestmark = [pytest.mark.compat, pytest.mark.slow]

#: (profile, model prefix): the OpenAI route and the Anthropic route.
ROUTES = [pytest.param("gpt", id="openai-route"), pytest.param("claude", id="anthropic-route")]


async def _no_wait(seconds: float) -> None:
    return None


@pytest.fixture
def engine(gateway: Gateway) -> Engine:
    """An engine over the gateway's project; retries do not sleep (the budget still counts)."""
    hooks = RetryHooks(sleep=lambda s: None, asleep=_no_wait)
    return Engine(gateway.root, env={KEY_ENV: MASTER_KEY}, retry_hooks=hooks)


def _request(
    prompt: str, profile: str, model: str, inputs: dict[str, object] | None = None
) -> RunRequest:
    return RunRequest(
        prompt_id=prompt, profile=profile, overrides=Overrides(model=model), inputs=inputs or {}
    )


@pytest.mark.parametrize("profile", ROUTES)
def test_text_comes_back_with_the_gateway_request_id(engine: Engine, profile: str) -> None:
    result = engine.run(_request("greet", profile, f"{profile}-text"))
    assert result.output.text == TEXT
    assert result.validation.valid
    assert result.finish_reason == "stop"
    # LiteLLM answers with its own call id, not the provider's request-id header.
    assert result.metadata["request_id"]
    assert result.metadata["request_id_header"] == "x-litellm-call-id"
    assert result.usage.llm_calls == 1


def test_the_gateway_cost_is_kept_next_to_scriptoriums_own(engine: Engine) -> None:
    result = engine.run(_request("greet", "gpt", "gpt-text"))
    cost = result.metadata["gateway_cost"]
    assert cost["header"] == "x-litellm-response-cost"
    assert isinstance(cost["usd"], float)
    assert cost["usd"] > 0
    # scriptorium prices by its own table: the mock model is not in it, so 0, and it says so.
    assert result.usage.cost_micro == 0
    assert result.metadata["pricing"]


@pytest.mark.parametrize("profile", ROUTES)
@pytest.mark.parametrize("strategy", ["native", "tool", "prompt"])
def test_each_strategy_gives_the_parsed_value(engine: Engine, profile: str, strategy: str) -> None:
    model = "gpt-tool" if (profile, strategy) == ("gpt", "tool") else f"{profile}-json"
    result = engine.run(_request(f"label/{strategy}", profile, model, {"text": "Love it"}))
    assert result.validation.valid, result.validation.issues
    assert result.validation.value == {"label": "positive", "confidence": 0.9}
    assert result.metadata["strategy"] == strategy
    # A forced tool call is the answer: one finish reason for it whatever the route says.
    assert result.finish_reason == "stop"


def test_streaming_on_the_openai_route_delivers_the_text_in_pieces(engine: Engine) -> None:
    with engine.stream(_request("greet", "gpt", "gpt-text")) as stream:
        pieces = [e.text for e in stream if isinstance(e, TextDelta)]
        result = stream.result()
    assert "".join(pieces) == TEXT
    assert len(pieces) > 1
    assert result.output.text == TEXT


def test_streaming_on_the_anthropic_route_reads_a_json_answer_as_the_whole_reply(
    engine: Engine,
) -> None:
    with engine.stream(_request("greet", "claude", "claude-text")) as stream:
        pieces = [e.text for e in stream if isinstance(e, TextDelta)]
        result = stream.result()
    assert "".join(pieces) == TEXT
    assert result.output.text == TEXT


def test_async_runs_share_the_same_answers(engine: Engine) -> None:
    async def both() -> list[str]:
        first = await engine.arun(_request("greet", "gpt", "gpt-text"))
        second = await engine.arun(_request("greet", "claude", "claude-text"))
        return [first.output.text, second.output.text]

    assert asyncio.run(both()) == [TEXT, TEXT]


@pytest.mark.parametrize("profile", ROUTES)
def test_a_rate_limit_is_retried_then_reported_as_rate_limited(
    engine: Engine, profile: str
) -> None:
    with pytest.raises(errors.LLMGenerateError) as info:
        engine.run(_request("greet", profile, f"{profile}-429"))
    assert info.value.reason == "rate_limited"
    assert info.value.retryable
    assert info.value.attempts == 3  # the default max_retries=2, no more
    assert MASTER_KEY not in str(info.value)


@pytest.mark.parametrize("profile", ROUTES)
def test_a_gateway_server_error_is_retried_then_reported(engine: Engine, profile: str) -> None:
    with pytest.raises(errors.LLMGenerateError) as info:
        engine.run(_request("greet", profile, f"{profile}-500"))
    assert info.value.reason == "server_error"
    assert info.value.attempts == 3


@pytest.mark.parametrize("profile", ROUTES)
def test_a_model_the_gateway_does_not_know_is_an_invalid_request(
    engine: Engine, profile: str
) -> None:
    with pytest.raises(errors.LLMGenerateError) as info:
        engine.run(_request("greet", profile, "no-such-model"))
    assert info.value.reason in {"invalid_request", "not_found"}
    assert not info.value.retryable
    assert info.value.attempts == 1


def test_a_wrong_key_is_refused_and_never_shown(gateway: Gateway) -> None:
    engine = Engine(gateway.root, env={KEY_ENV: "sk-compat-wrong-key-00000"})
    with pytest.raises(errors.LLMGenerateError) as info:
        engine.run(_request("greet", "gpt", "gpt-text"))
    assert not info.value.retryable
    assert "sk-compat-wrong-key-00000" not in str(info.value)


def test_counting_tokens_on_the_anthropic_route_gives_a_count_or_an_honest_estimate(
    engine: Engine,
) -> None:
    count = engine.count_tokens(_request("greet", "claude", "claude-text"))
    assert count.input_tokens > 0
    assert (count.provider, count.model) == ("anthropic", "claude-text")
    if count.estimated:  # the gateway could not count: said why, never a failure
        assert count.reason


def test_counting_tokens_on_the_openai_route_gives_a_count_or_an_honest_estimate(
    engine: Engine,
) -> None:
    """OpenAI requests are counted with the Responses API's input-token count (the input is the
    same whichever API generates); a gateway that serves the route counts, one that does not is
    estimated, saying why."""
    count = engine.count_tokens(_request("greet", "gpt", "gpt-text"))
    assert count.input_tokens > 0
    assert (count.provider, count.model) == ("openai", "gpt-text")
    if count.estimated:
        assert count.reason


@pytest.mark.parametrize("profile", ROUTES)
def test_verify_proves_the_gateway_key_endpoint_and_model(engine: Engine, profile: str) -> None:
    response = engine.verify(profile, model=f"{profile}-text")
    assert response.attempts == 1
    assert response.metadata["request_id"]


def test_a_provider_batch_through_a_gateway_without_batch_routes_fails_once_and_says_so(
    engine: Engine,
) -> None:
    rows = [_request("greet", "claude", "claude-text")]
    with pytest.raises(errors.LLMGenerateError) as info:
        engine.submit_batch(rows).wait(poll_s=0.01)
    message = str(info.value)
    assert "has no batch API" in message
    assert "claude-text" in message
    assert info.value.reason == "config"
