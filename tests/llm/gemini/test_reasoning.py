"""The reasoning settings mapped to ``thinkingConfig`` from the dated capability table."""

from __future__ import annotations

from typing import Any

import pytest

from scriptorium.errors import InvalidRequestError
from scriptorium.llm.gemini.reasoning import reasoning_plan
from scriptorium.llm.reasoning import ReasoningPlan
from scriptorium.profile.model import ExecutionSettings


def plan(model: str, **settings: Any) -> ReasoningPlan:
    return reasoning_plan(model, ExecutionSettings(**settings))


@pytest.mark.parametrize(
    ("level", "budget"), [("low", 1024), ("medium", 8192), ("high", 24_576), ("max", 24_576)]
)
def test_levels_become_budgets_on_flash(level: str, budget: int) -> None:
    got = plan("gemini-2.5-flash", reasoning=level, max_tokens=30_000)
    assert got.sent == {"thinkingConfig": {"thinkingBudget": budget, "includeThoughts": True}}
    assert got.thinking
    assert got.matched == "gemini-2.5-flash"


def test_off_is_a_zero_budget_where_the_model_can_stop() -> None:
    got = plan("gemini-2.5-flash", reasoning="off")
    assert got.sent == {"thinkingConfig": {"thinkingBudget": 0}}
    assert not got.thinking


def test_off_on_pro_is_its_least_budget_and_prepare_says_so() -> None:
    got = plan("gemini-2.5-pro", reasoning="off")
    assert got.sent["thinkingConfig"]["thinkingBudget"] == 128
    assert "cannot stop thinking" in got.notes[0]


def test_max_on_pro_is_its_most_budget() -> None:
    got = plan("gemini-2.5-pro", reasoning="max", max_tokens=64_000)
    assert got.sent["thinkingConfig"]["thinkingBudget"] == 32_768


def test_a_level_budget_is_kept_below_max_tokens() -> None:
    got = plan("gemini-2.5-flash", reasoning="high", max_tokens=4000)
    assert got.sent["thinkingConfig"]["thinkingBudget"] == 3999
    assert any("below max_tokens" in n for n in got.notes)


def test_a_budget_wins_over_the_level_and_must_be_below_max_tokens() -> None:
    got = plan("gemini-2.5-flash", reasoning="low", reasoning_budget_tokens=2000, max_tokens=4000)
    assert got.sent["thinkingConfig"]["thinkingBudget"] == 2000
    assert "reasoning" in got.ignored
    with pytest.raises(InvalidRequestError):
        plan("gemini-2.5-flash", reasoning_budget_tokens=5000, max_tokens=4000)


def test_a_budget_below_the_model_least_is_refused() -> None:
    with pytest.raises(InvalidRequestError):
        plan("gemini-2.5-pro", reasoning_budget_tokens=10, max_tokens=4000)


@pytest.mark.parametrize(
    ("model", "level", "sent"),
    [
        ("gemini-3-pro-preview", "medium", "low"),
        ("gemini-3-pro-preview", "xhigh", "high"),
        ("gemini-3-pro-preview", "off", "low"),
        ("gemini-3-flash-preview", "off", "minimal"),
        ("gemini-3-flash-preview", "medium", "medium"),
    ],
)
def test_level_models_get_the_nearest_level(model: str, level: str, sent: str) -> None:
    got = plan(model, reasoning=level)
    assert got.sent == {"thinkingConfig": {"thinkingLevel": sent, "includeThoughts": True}}
    if sent != level:
        assert got.notes


def test_a_budget_on_a_level_model_is_ignored_with_the_reason() -> None:
    got = plan("gemini-3-pro-preview", reasoning_budget_tokens=2000, max_tokens=4000)
    assert got.sent == {}
    assert "thinkingLevel" in got.ignored["reasoning_budget_tokens"]


def test_a_model_that_does_not_think_ignores_the_settings() -> None:
    got = plan("gemini-2.0-flash", reasoning="high")
    assert got.sent == {}
    assert got.ignored_settings == ("reasoning",)


def test_an_unknown_model_gets_what_was_asked() -> None:
    assert plan("gemini-9-ultra", reasoning="high").sent == {
        "thinkingConfig": {"thinkingLevel": "high", "includeThoughts": True}
    }
    assert plan("gemini-9-ultra", reasoning_budget_tokens=100).sent == {
        "thinkingConfig": {"thinkingBudget": 100, "includeThoughts": True}
    }
    assert plan("gemini-9-ultra").sent == {}
