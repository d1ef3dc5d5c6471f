"""The ``fake`` provider: canned responses from a profile's ``options.responses``."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.client import AsyncClient, Client
from scriptorium.llm.fake import FakeProviderClient, estimate_tokens
from scriptorium.llm.model import LLMRequest, Target
from scriptorium.prompt.model import Message

REQUEST = LLMRequest(
    target=Target(provider="fake", model="demo"),
    system="Be brief.",
    messages=(Message(role="user", content="Say something."),),
)


def test_responses_come_in_turn_and_the_last_repeats() -> None:
    """Each call takes the next string; after the list runs out the last one is served again."""
    client = FakeProviderClient(responses=["one", "two"])
    texts = [client.generate(REQUEST).text for _ in range(4)]
    assert texts == ["one", "two", "two", "two"]
    assert client.calls == 4


def test_usage_is_a_deterministic_estimate_and_costs_nothing() -> None:
    """Tokens are len/4 of prompt and answer; cost is 0; one attempt, one call."""
    response = FakeProviderClient(responses=["abcdefgh"]).generate(REQUEST)
    assert response.usage.output_tokens == 2
    assert response.usage.input_tokens == estimate_tokens("Be brief.\nSay something.")
    assert response.usage.cost_micro == 0
    assert (response.attempts, response.usage.llm_calls) == (1, 1)
    assert response.model == "demo"
    assert response.finish_reason == "stop"


def test_from_options_reads_the_profile_options() -> None:
    """options.responses configures the client; both ports are satisfied."""
    client = FakeProviderClient.from_options({"responses": ["hi"]})
    assert isinstance(client, Client)
    assert isinstance(client, AsyncClient)
    assert asyncio.run(client.agenerate(REQUEST)).text == "hi"


@pytest.mark.parametrize(
    "options", [{}, {"responses": []}, {"responses": "hi"}, {"responses": [1]}]
)
def test_bad_options_are_a_config_error(options: dict[str, object]) -> None:
    """Missing, empty or non-string responses fail with reason config."""
    with pytest.raises(LLMGenerateError) as caught:
        FakeProviderClient.from_options(options)
    assert caught.value.reason == "config"


def test_the_turn_counter_is_thread_safe() -> None:
    """Concurrent calls each get a distinct turn: no response is skipped or served twice."""
    client = FakeProviderClient(responses=[str(i) for i in range(200)])
    with ThreadPoolExecutor(max_workers=8) as pool:
        texts = list(pool.map(lambda _: client.generate(REQUEST).text, range(200)))
    assert sorted(texts, key=int) == [str(i) for i in range(200)]
