"""The fallback chain on its own: what it says comes next when a profile is left (the run machine
driving it is tested in test_fallback_flow.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scriptorium.errors import APIKeyEnvMissingError, LLMGenerateError
from scriptorium.limits.cooldown import LocalCooldowns
from scriptorium.testing import FixedClock
from scriptorium.usecase.fallback import Ended, FallbackChain, NextProfile, cooldown_key
from scriptorium.usecase.model import RunRequest
from scriptorium.usecase.plan import Plan
from tests.usecase.fallback_project import planner

START = datetime(2026, 1, 1, tzinfo=UTC)
HELLO = RunRequest(prompt_id="hello")


def _chain(
    plan: Plan, *, enabled: bool = True, cooldowns: LocalCooldowns | None = None
) -> FallbackChain:
    return FallbackChain(
        plan, enabled=enabled, started=START, clock=FixedClock(START), cooldowns=cooldowns
    )


def _overloaded() -> LLMGenerateError:
    return LLMGenerateError("scripted overloaded", reason="overloaded", attempts=2)


def test_a_failure_it_falls_back_on_asks_for_the_next_profile_then_its_plan() -> None:
    the_planner = planner()
    plan = the_planner.plan(HELLO)
    chain = _chain(plan)
    chain.called = True
    assert chain.leaves_on(plan, "overloaded")
    step = chain.failed(plan, _overloaded(), 2)
    assert isinstance(step, NextProfile)
    assert (step.profile, step.left, step.reason, step.attempt) == (
        "backup",
        "primary",
        "overloaded",
        2,
    )
    backup = the_planner.plan_fallback(step.origin, step.profile)
    assert chain.prepared(plan, step, backup) is backup
    assert not chain.called, "the plan to generate next has not been called yet"
    [left] = chain.records
    assert (left.profile, left.reason, left.usage.llm_calls) == ("primary", "overloaded", 2)


def test_with_nothing_left_to_try_the_run_ends_raising_what_the_last_profile_was_left_for() -> None:
    the_planner = planner()
    plan = the_planner.plan(HELLO)
    chain = _chain(plan)
    chain.called = True
    error = _overloaded()
    step = chain.failed(plan, error, 2)
    for _ in range(2):  # neither later profile can be prepared
        assert isinstance(step, NextProfile)
        step = chain.prepared(plan, step, APIKeyEnvMissingError(f"no key for {step.profile}"))
    assert step == Ended(error)
    assert [r.profile for r in chain.records] == ["backup", "third"]


def test_a_disabled_chain_and_a_reason_not_listed_never_leave() -> None:
    plan = planner().plan(HELLO)
    assert _chain(plan, enabled=False).failed(plan, _overloaded(), 2) is None
    auth = LLMGenerateError("scripted auth", reason="auth")
    assert _chain(plan).failed(plan, auth, 2) is None
    streamed = LLMGenerateError("cut", reason="overloaded", partial_text="hel")
    assert _chain(plan).failed(plan, streamed, 2) is None


def test_a_first_profile_cooling_down_is_left_at_the_opening() -> None:
    plan = planner().plan(HELLO)
    cooldowns = LocalCooldowns()
    assert _chain(plan, cooldowns=cooldowns).opening(plan) is None
    cooldowns.cool(cooldown_key(plan), 30.0)
    step = _chain(plan, cooldowns=cooldowns).opening(plan)
    assert isinstance(step, NextProfile)
    assert (step.profile, step.reason) == ("backup", "cooldown")


def test_preparing_gives_a_plan_or_an_error_and_nothing_else() -> None:
    plan = planner().plan(HELLO)
    chain = _chain(plan)
    step = chain.failed(plan, _overloaded(), 2)
    assert isinstance(step, NextProfile)
    with pytest.raises(TypeError, match="gives a Plan, not str"):
        chain.prepared(plan, step, "a plan")
