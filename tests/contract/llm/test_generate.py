"""The LLM client contract, part one: what one generation returns, over every adapter.

Text, each structured-output strategy, usage and cost, finish reasons, token counting, verify and
lone surrogates in an answer. The adapters and how each is scripted: ``harnesses.py``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.client import TokenCounter, supports
from scriptorium.llm.model import LLMResponse, StructuredOutput
from scriptorium.llm.pricing import PRICE_TABLE
from scriptorium.llm.tokens import estimate_input_tokens
from tests.conftest import RunnerFactory
from tests.contract.llm.harnesses import KEY, SAY, Harness, adapters, runner_over

PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
ADA = {"name": "Ada", "age": 36}


def test_text_comes_back_with_its_model_and_attempts(harness: Harness) -> None:
    """A plain answer: its text, finish reason stop, the model, and one attempt per HTTP request
    made (none for a recording)."""
    harness.answer("Hello, Ada!")
    response = harness.run(lambda client: client.generate(harness.request()))
    assert isinstance(response, LLMResponse)
    assert response.text == "Hello, Ada!"
    assert response.finish_reason == "stop"
    assert response.model
    assert response.attempts == harness.requests_per_answer
    assert response.latency_ms >= 0


def test_async_text_is_the_same_answer(harness: Harness) -> None:
    """``agenerate`` gives what ``generate`` gives."""
    harness.answer("Hello, Ada!")
    harness.answer("Hello, Ada!")
    sync = harness.run(lambda client: client.generate(harness.request()))
    done = harness.run(lambda client: asyncio.run(client.agenerate(harness.request())))
    assert (done.text, done.finish_reason, done.model, done.attempts) == (
        sync.text,
        sync.finish_reason,
        sync.model,
        sync.attempts,
    )


@pytest.mark.parametrize("strategy", ["native", "tool", "prompt", "auto"])
def test_each_structured_output_strategy_returns_the_json(harness: Harness, strategy: str) -> None:
    """Each strategy is sent as itself (``auto`` as the adapter's pick for the model), named in
    ``metadata["strategy"]``, and the answer is the JSON text of the value."""
    if harness.auto_picks is None:
        harness.cannot("strategies")
    used = harness.auto_picks if strategy == "auto" else strategy
    harness.answer_structured(ADA, used)
    spec = StructuredOutput(schema_=PERSON, strategy=strategy, name="person")
    response = harness.run(lambda client: client.generate(harness.request(structured_output=spec)))
    assert json.loads(response.text) == ADA
    assert response.metadata["strategy"] == used
    assert response.finish_reason == "stop"
    assert harness.wire_strategy() == used


def _table_cost(model: str, input_tokens: int, output_tokens: int) -> int:
    price = PRICE_TABLE[model]
    total = input_tokens * price.input + output_tokens * price.output
    return (total + 500_000) // 1_000_000  # micro-USD, rounded half up


def test_usage_is_whole_tokens_and_an_integer_cost(harness: Harness) -> None:
    """Usage holds non-negative integers; the cost is integer micro-USD."""
    harness.answer("Hello", input_tokens=1200, output_tokens=345)
    usage = harness.run(lambda client: client.generate(harness.request())).usage
    for name, value in usage.model_dump().items():
        assert type(value) is int, name
        assert value >= 0, name
    if not harness.scripts_usage:
        harness.cannot("usage")
    assert (usage.input_tokens, usage.output_tokens) == (1200, 345)


def test_cost_comes_from_the_price_table(harness: Harness) -> None:
    """The cost of an answer is its tokens priced by the table, summed per token class in integer
    micro-USD and rounded once; a recording charges nothing now and keeps what it cost."""
    if harness.pricing == "none":
        harness.cannot("pricing")
    harness.answer("Hello", input_tokens=1200, output_tokens=345)
    response = harness.run(lambda client: client.generate(harness.request()))
    expected = _table_cost(harness.priced_as or harness.model, 1200, 345)
    assert expected > 0
    if harness.pricing == "table":
        assert response.usage.cost_micro == expected
        assert response.usage.llm_calls == response.attempts
    else:
        assert response.usage.cost_micro == 0
        assert response.metadata["replay"]["recorded_cost_micro"] == expected


@pytest.mark.parametrize("finish", ["stop", "length", "refusal"])
def test_finish_reasons_are_reported_in_our_words(harness: Harness, finish: str) -> None:
    """The provider's stop reason comes back as stop, length or refusal."""
    harness.answer("Partial answ", finish=finish)
    response = harness.run(lambda client: client.generate(harness.request()))
    assert response.finish_reason == finish
    assert response.text == "Partial answ"


def test_count_tokens_is_the_providers_count_or_an_estimate(
    harness: Harness, make_runner: RunnerFactory
) -> None:
    """With a counting endpoint the adapter returns the provider's count and a run's token count
    says it is exact; without one a run's count is the local estimate and says so."""
    harness.answer("never asked for")  # counting makes no generation; the fake needs a script
    counted = harness.provider_count(42)
    assert supports(harness.client, TokenCounter) is counted
    if counted:
        assert harness.run(lambda client: client.count_tokens(harness.request())) == 42

    def count(client: Any) -> tuple[int, bool, int]:
        runner = runner_over(harness, client, make_runner)
        _, llm_request = runner.request_for(SAY)
        tokens = runner.count_tokens(SAY)
        return tokens.input_tokens, tokens.estimated, estimate_input_tokens(llm_request)

    tokens, estimated, estimate = harness.run(count)
    assert estimated is not counted
    assert tokens == (42 if counted else estimate)


def test_verify_proves_a_working_setup_with_one_minimal_request(harness: Harness) -> None:
    """``verify`` answers for a working setup; an adapter that asks its provider does so with one
    small request."""
    response = harness.verify()
    assert isinstance(response, LLMResponse)
    assert response.model
    if harness.requests_to_verify:
        assert harness.requests_made() == harness.requests_to_verify
        body = harness.last_body()
        limits = harness.output_limits(body)
        assert limits
        assert max(limits) <= 16
        assert len(harness.messages_of(body)) == 1


def test_verify_reports_a_broken_setup(harness: Harness) -> None:
    """``verify`` of a broken setup fails with the reason, at once (a bad key is not retried)."""
    reason = harness.break_verify()
    with pytest.raises(LLMGenerateError) as caught:
        harness.verify_as_set_up(KEY)
    assert caught.value.reason == reason
    if harness.requests_to_verify:
        assert caught.value.attempts == 1
        assert harness.requests_made() == 1


@adapters()
def test_lone_surrogates_in_an_answer_become_replacement_characters(
    harness: Harness, make_runner: RunnerFactory
) -> None:
    """An answer holding a lone surrogate (legal in JSON, not encodable as UTF-8) comes out of a
    run as U+FFFD, with an ``encoding`` issue on the run."""
    harness.answer("a\ud800b")
    result = harness.run(lambda client: runner_over(harness, client, make_runner).run(SAY))
    assert result.output.text == "a\ufffdb"
    assert not result.validation.valid
    assert [i.keyword for i in result.validation.issues] == ["encoding"]
    result.model_dump_json()  # the result serialises


def test_reasoning_comes_back_apart_from_the_text_and_is_priced_once(harness: Harness) -> None:
    """The model's reasoning is the response's ``reasoning``, never its text; its tokens are among
    the output tokens, so the cost is the same as for an answer without reasoning."""
    harness.answer_reasoning(
        "Hello", "The user greets me.", output_tokens=345, reasoning_tokens=300
    )
    response = harness.run(lambda client: client.generate(harness.request()))
    assert response.text == "Hello"
    assert response.reasoning == "The user greets me."
    assert (response.usage.output_tokens, response.usage.reasoning_tokens) == (345, 300)
    if harness.pricing == "table":
        assert response.usage.cost_micro == _table_cost(harness.priced_as or harness.model, 10, 345)
