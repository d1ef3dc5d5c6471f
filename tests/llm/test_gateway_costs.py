"""A gateway's reported cost for model aliases scriptorium cannot price: read per run into
``metadata["gateway_cost"]`` and added up, apart from ``cost_micro``, in batch summaries and test
reports; and a gateway's forwarded retry hint (``llm_provider-retry-after``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scriptorium.cli.batch_records import Totals, report
from scriptorium.cli.output import Reporter
from scriptorium.errors import LLMGenerateError
from scriptorium.evals.report import RepeatOutcome
from scriptorium.evals.score import build_report, case_report, group_report
from scriptorium.llm.model import LLMRequest, Target
from scriptorium.llm.openai.client import OpenAIClient
from scriptorium.llm.pricing import gateway_cost_micro
from scriptorium.llm.retry import RetryHooks, parse_retry_after
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message
from scriptorium.testing import FakeOpenAIServer

COST = {"header": "x-litellm-response-cost", "usd": 0.00125}


@pytest.mark.parametrize(
    ("metadata", "micro"),
    [
        ({"gateway_cost": COST}, 1250),
        ({"gateway_cost": {"header": "x", "usd": 0.0000005}}, 1),  # half up
        ({"gateway_cost": {"header": "x", "usd": "not a number"}}, 0),
        ({"gateway_cost": {"header": "x", "usd": float("nan")}}, 0),
        ({"gateway_cost": {"header": "x", "usd": -1.0}}, 0),
        ({}, 0),
        (None, 0),
    ],
)
def test_a_reported_cost_in_micro_usd(metadata: Any, micro: int) -> None:
    assert gateway_cost_micro(metadata) == micro


def _record(cost: dict[str, Any] | None) -> dict[str, Any]:
    metadata = {} if cost is None else {"gateway_cost": cost}
    usage = {"input_tokens": 10, "output_tokens": 5, "cost_micro": 0}
    return {"valid": True, "result": {"usage": usage, "metadata": metadata}}


def test_a_batch_summary_adds_up_the_gateway_cost_apart_from_its_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    totals = Totals()
    for cost in (COST, COST, None):
        totals.add(_record(cost))
    assert (totals.cost_micro, totals.gateway_cost_micro) == (0, 2500)
    assert report(Reporter(json_mode=True), 3, totals, 0, Path("out.jsonl")) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["cost_micro"] == 0
    assert summary["gateway_cost_micro"] == 2500
    report(Reporter(json_mode=False), 3, totals, 0, Path("out.jsonl"))
    assert "gateway reported $0.002500" in capsys.readouterr().out


def test_a_test_report_adds_up_the_gateway_cost_apart_from_its_own() -> None:
    outcomes = [
        RepeatOutcome(repeat=1, status="passed", cost_micro=0, gateway_cost_micro=1250),
        RepeatOutcome(repeat=2, status="passed", cost_micro=0, gateway_cost_micro=1250),
    ]
    case = case_report("p", "alias", "c", 1.0, outcomes)
    group = group_report("p", "alias", [case])
    total = build_report([group])
    assert (case.gateway_cost_micro, group.gateway_cost_micro) == (2500, 2500)
    assert (total.cost_micro, total.gateway_cost_micro) == (0, 2500)


def test_a_gateways_forwarded_retry_hint_is_read_like_retry_after() -> None:
    assert parse_retry_after({"llm_provider-retry-after": "7"}) == 7.0
    assert parse_retry_after({"LLM_PROVIDER-RETRY-AFTER-MS": "1500"}) == 1.5
    # The provider's own header, when both came, wins.
    assert parse_retry_after({"retry-after": "2", "llm_provider-retry-after": "9"}) == 2.0
    with FakeOpenAIServer() as server:
        server.fail(429, code="rate_limit_exceeded", headers={"llm_provider-retry-after": "7"})
        request = LLMRequest(
            target=Target(provider="openai", model="alias", endpoint=server.url),
            api_key="sk-gateway-hint-key-0000",
            messages=(Message(role="user", content="Hi"),),
            settings=ExecutionSettings(max_retries=0),
        )
        hooks = RetryHooks(sleep=lambda _s: None)
        with OpenAIClient(hooks=hooks) as client, pytest.raises(LLMGenerateError) as caught:
            client.generate(request)
    assert caught.value.reason == "rate_limited"
    assert caught.value.retry_after_s == 7.0
