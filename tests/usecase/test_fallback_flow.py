"""The fallback rules of the run machine, driven by hand: scripted outcomes per profile in, the
steps, the fallbacks, the attempts and the usage out."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scriptorium.errors import APIKeyEnvMissingError, LLMGenerateError
from scriptorium.limits.cooldown import DEFAULT_COOLDOWN_S, LocalCooldowns
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.profile.model import DEFAULT_FALLBACK_ON
from scriptorium.testing import FixedClock
from scriptorium.usecase.fallback import NextProfile, cooldown_key
from scriptorium.usecase.flow import Answered, Generate, Outcome, Repair, RunFlow
from scriptorium.usecase.model import Overrides, RunRequest, RunResult
from scriptorium.usecase.plan import Plan, Planner
from scriptorium.usecase.repair import RepairResult
from tests.usecase.fallback_project import PROFILES, VALIDATOR, planner

START = datetime(2026, 1, 1, tzinfo=UTC)
HELLO = RunRequest(prompt_id="hello")


class Clock:
    """Monotonic seconds that move only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _flow(
    plan: Plan,
    *,
    cooldowns: LocalCooldowns | None = None,
    clock: Callable[[], datetime] | None = None,
    answer: Callable[[LLMRequest], LLMResponse] | None = None,
) -> RunFlow:
    return RunFlow(
        plan,
        validator=VALIDATOR,
        can_repair=True,
        run_id="run-1",
        started=START,
        clock=clock or FixedClock(START),
        answer=answer,
        cooldowns=cooldowns,
    )


def _key(the_planner: Any, profile: str) -> str:
    """The cooldown key of the target ``profile`` calls (cooldowns are kept per target)."""
    return cooldown_key(the_planner.plan(RunRequest(prompt_id="hello", profile=profile)))


def _busy(reason: str = "overloaded", attempts: int = 3, **fields: Any) -> LLMGenerateError:
    return LLMGenerateError(f"scripted {reason}", reason=reason, attempts=attempts, **fields)


def _ok(text: str, input_tokens: int, output_tokens: int, cost: int) -> LLMResponse:
    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens, cost_micro=cost)
    return LLMResponse(text=text, usage=usage, attempts=1)


def _drive(
    flow: RunFlow, the_planner: Planner, script: Mapping[str, Sequence[Outcome]]
) -> tuple[RunResult, list[str]]:
    """Run ``flow`` to its end: each profile's outcomes in turn; NextProfile steps prepared by
    ``the_planner``. The result, and the steps made (``profile:kind``)."""
    turns = {name: list(items) for name, items in script.items()}
    made: list[str] = []
    while (step := flow.next_step()) is not None:
        if isinstance(step, NextProfile):
            made.append(f"{step.profile}:prepare")
            try:
                flow.send(the_planner.plan_fallback(step.origin, step.profile))
            except APIKeyEnvMissingError as err:
                flow.send(err)
            continue
        profile = step.plan.prepared.profile
        made.append(f"{profile}:{step.kind}")
        outcome = turns[profile].pop(0)
        if isinstance(step, Repair) and isinstance(outcome, LLMResponse):
            outcome = RepairResult(response=outcome)
        flow.send(outcome)
    return flow.result(), made


@pytest.mark.parametrize("reason", DEFAULT_FALLBACK_ON)
def test_each_default_reason_moves_the_run_to_the_next_profile(reason: str) -> None:
    """The failed call's requests are counted, the backup's answer is the result."""
    the_planner = planner()
    flow = _flow(the_planner.plan(HELLO))
    result, made = _drive(
        flow, the_planner, {"primary": [_busy(reason)], "backup": [_ok("hi", 10, 2, 70)]}
    )
    assert made == ["primary:initial", "backup:prepare", "backup:initial"]
    assert result.output.text == "hi"
    assert result.prepared.profile == "backup"
    assert result.prepared.target.model == "b-1"
    [left] = result.fallbacks
    assert (left.profile, left.provider, left.model) == ("primary", "fake", "p-1")
    assert (left.code, left.reason, left.message, left.attempts) == (
        "llm_generate",
        reason,
        f"scripted {reason}",
        3,
    )
    assert left.request_hash == the_planner.plan(HELLO).prepared.request_hash
    assert left.usage == Usage(llm_calls=3)
    [attempt] = result.attempts
    assert (attempt.profile, attempt.provider, attempt.kind) == ("backup", "fake", "initial")
    assert result.usage == Usage(input_tokens=10, output_tokens=2, cost_micro=70, llm_calls=4)


@pytest.mark.parametrize(
    "reason", [*sorted(LLMGenerateError.REASONS - set(DEFAULT_FALLBACK_ON)), None]
)
def test_every_other_reason_is_raised_on_the_first_profile(reason: str | None) -> None:
    """auth, permission, invalid_request, context_window (not listed by default), cancelled, ...:
    no fallback, no fallbacks recorded on the error."""
    flow = _flow(planner().plan(HELLO))
    error = LLMGenerateError("no", reason=reason)
    with pytest.raises(LLMGenerateError) as caught:
        flow.send(error)
    assert caught.value is error
    assert error.fallbacks is None
    assert error.usage is None
    assert flow.next_step() is None


@pytest.mark.parametrize("reason", ["context_window", "invalid_response", "not_found"])
def test_a_listed_extra_reason_moves_on(reason: str) -> None:
    profiles = {
        **PROFILES,
        "primary": {"provider": "fake", "fallback": ["backup"], "fallback_on": [reason]},
    }
    the_planner = planner(profiles)
    flow = _flow(the_planner.plan(HELLO))
    result, _ = _drive(
        flow, the_planner, {"primary": [_busy(reason, 1)], "backup": [_ok("hi", 1, 1, 0)]}
    )
    assert [f.reason for f in result.fallbacks] == [reason]
    # ...and a default reason the profile's own list leaves out does not.
    flow = _flow(the_planner.plan(HELLO))
    with pytest.raises(LLMGenerateError, match="scripted overloaded"):
        flow.send(_busy("overloaded"))


def test_the_next_profile_step_and_the_generation_it_leads_to() -> None:
    """The step names the profile left, why, the next one, and the request to prepare it from;
    the plan sent back is generated next, as attempt 1 (the failed call made no attempt)."""
    the_planner = planner()
    plan = the_planner.plan(HELLO)
    flow = _flow(plan)
    flow.send(_busy())
    step = flow.next_step()
    assert isinstance(step, NextProfile)
    assert (step.left, step.profile, step.reason, step.attempt) == (
        "primary",
        "backup",
        "overloaded",
        1,
    )
    assert step.origin == HELLO
    assert step.plan is plan
    backup = the_planner.plan_fallback(step.origin, step.profile)
    flow.send(backup)
    generate = flow.next_step()
    assert isinstance(generate, Generate)
    assert (generate.plan, generate.attempt) == (backup, 1)
    assert flow.plan is backup


def test_a_profile_that_fails_too_moves_the_run_on_again_and_the_last_error_is_raised() -> None:
    """The error of the last profile is raised, carrying every profile left before it and the
    whole run's usage."""
    the_planner = planner()
    flow = _flow(the_planner.plan(HELLO))
    last = _busy("server_error", 2)
    with pytest.raises(LLMGenerateError) as caught:
        _drive(
            flow,
            the_planner,
            {"primary": [_busy("overloaded", 3)], "backup": [_busy("timeout", 1)], "third": [last]},
        )
    assert caught.value is last
    assert [(f.profile, f.reason, f.attempts) for f in last.fallbacks or ()] == [
        ("primary", "overloaded", 3),
        ("backup", "timeout", 1),
    ]
    assert last.usage is not None
    assert last.usage.llm_calls == 6


def test_a_profile_that_cannot_be_prepared_is_recorded_and_the_chain_goes_on() -> None:
    profiles = {**PROFILES, "primary": {"provider": "fake", "fallback": ["keyed", "backup"]}}
    the_planner = planner(profiles)
    flow = _flow(the_planner.plan(HELLO))
    result, made = _drive(flow, the_planner, {"primary": [_busy()], "backup": [_ok("hi", 1, 1, 0)]})
    assert made == ["primary:initial", "keyed:prepare", "backup:prepare", "backup:initial"]
    assert [(f.profile, f.code, f.reason) for f in result.fallbacks] == [
        ("primary", "llm_generate", "overloaded"),
        ("keyed", "api_key_env_missing", "api_key_env_missing"),
    ]
    keyed = result.fallbacks[1]
    assert (keyed.provider, keyed.model, keyed.request_hash, keyed.attempts) == (
        None,
        None,
        None,
        0,
    )
    assert "UNSET_KEY_VAR" in keyed.message


def test_when_the_last_profile_cannot_be_prepared_the_error_it_was_left_for_is_raised() -> None:
    """The run ends on the last profile that made a call: its error, the unprepared one in
    its fallbacks."""
    profiles = {**PROFILES, "primary": {"provider": "fake", "fallback": ["keyed"]}}
    the_planner = planner(profiles)
    flow = _flow(the_planner.plan(HELLO))
    first = _busy()
    with pytest.raises(LLMGenerateError) as caught:
        _drive(flow, the_planner, {"primary": [first]})
    assert caught.value is first
    assert [f.profile for f in first.fallbacks or ()] == ["keyed"]


def test_invalid_output_after_the_profiles_repairs_moves_on_when_listed() -> None:
    """Every generation of both profiles is an attempt, with its profile; the usage sums them;
    the answering profile's result is not marked repaired."""
    the_planner = planner()
    plan = the_planner.plan(RunRequest(prompt_id="contact"))
    flow = _flow(plan)
    result, made = _drive(
        flow,
        the_planner,
        {
            "picky": [_ok("{}", 5, 1, 10), _ok("[]", 6, 1, 11)],
            "backup": [_ok('{"name": "Ada"}', 7, 3, 12)],
        },
    )
    assert made == ["picky:initial", "picky:repair", "backup:prepare", "backup:initial"]
    assert [(a.profile, a.kind, a.valid) for a in result.attempts] == [
        ("picky", "initial", False),
        ("picky", "repair", False),
        ("backup", "initial", True),
    ]
    assert result.validation.valid
    assert not result.validation.repaired
    assert result.validation.attempts == 3
    [left] = result.fallbacks
    assert (left.code, left.reason, left.attempts, left.usage) == (
        "output_invalid",
        "invalid_output",
        2,
        Usage(),
    )
    assert "stayed invalid after 1 repair(s)" in left.message
    assert result.usage == Usage(input_tokens=18, output_tokens=5, cost_micro=33, llm_calls=3)


def test_invalid_output_is_the_result_when_not_listed() -> None:
    flow = _flow(planner().plan(RunRequest(prompt_id="contact", profile="primary")))
    flow.send(_ok("{}", 1, 1, 0))
    flow.send(RepairResult(response=_ok("{}", 1, 1, 0)))
    assert flow.next_step() is None
    assert not flow.result().validation.valid


def test_a_failed_repair_leaves_the_output_invalid_and_moves_on_on_invalid_output() -> None:
    the_planner = planner()
    flow = _flow(the_planner.plan(RunRequest(prompt_id="contact")))
    result, _ = _drive(
        flow,
        the_planner,
        {
            "picky": [_ok("{}", 1, 1, 0), _busy("overloaded", 2)],
            "backup": [_ok('{"name": "x"}', 1, 1, 0)],
        },
    )
    assert [a.profile for a in result.attempts] == ["picky", "backup"]
    assert result.attempts[0].usage.llm_calls == 3  # its own request, and the repair's two
    assert result.fallbacks[0].attempts == 3
    assert result.usage.llm_calls == 4


def test_when_the_last_profile_after_invalid_output_cannot_be_prepared_the_output_stands() -> None:
    profiles = {
        **PROFILES,
        "picky": {"provider": "fake", "fallback": ["keyed"], "fallback_on": ["invalid_output"]},
    }
    the_planner = planner(profiles)
    flow = _flow(the_planner.plan(RunRequest(prompt_id="contact")))
    result, _ = _drive(flow, the_planner, {"picky": [_ok("{}", 1, 1, 0), _ok("{}", 1, 1, 0)]})
    assert result.prepared.profile == "picky"
    assert not result.validation.valid
    assert [f.profile for f in result.fallbacks] == ["keyed"]


def test_text_already_streamed_never_falls_back() -> None:
    """A failure after a stream delivered text is final, whatever its reason."""
    flow = _flow(planner().plan(HELLO))
    error = _busy("connection")
    error.partial_text = "Hel"
    with pytest.raises(LLMGenerateError) as caught:
        flow.send(error)
    assert caught.value is error


def test_a_provider_batch_answer_never_falls_back() -> None:
    """The batch answered for the first profile; a failed row is sent again on resume."""
    flow = _flow(planner().plan(HELLO), answer=lambda request: _ok("x", 0, 0, 0))
    assert isinstance(flow.next_step(), Answered)
    with pytest.raises(LLMGenerateError):
        flow.send(_busy())


def test_a_busy_failure_cools_the_profile_and_the_next_run_skips_it() -> None:
    """overloaded without retry-after: 30 s; the skipped profile is recorded (reason cooldown)
    and no call is made on it; once the time has passed it is tried again."""
    clock = Clock()
    cooldowns = LocalCooldowns(clock=clock)
    the_planner = planner()
    first = _flow(the_planner.plan(HELLO), cooldowns=cooldowns)
    _drive(first, the_planner, {"primary": [_busy()], "backup": [_ok("hi", 0, 0, 0)]})
    assert cooldowns.remaining(_key(the_planner, "primary")) == DEFAULT_COOLDOWN_S
    clock.now += 10
    second = _flow(the_planner.plan(HELLO), cooldowns=cooldowns)
    result, made = _drive(second, the_planner, {"backup": [_ok("hi", 0, 0, 0)]})
    assert made == ["backup:prepare", "backup:initial"]
    [skipped] = result.fallbacks
    assert (skipped.profile, skipped.code, skipped.reason, skipped.attempts) == (
        "primary",
        "cooldown",
        "cooldown",
        0,
    )
    assert skipped.retry_after_s == 20.0
    assert skipped.request_hash is not None
    clock.now += 21
    third = _flow(the_planner.plan(HELLO), cooldowns=cooldowns)
    _, made = _drive(third, the_planner, {"primary": [_ok("hi", 0, 0, 0)]})
    assert made == ["primary:initial"]


def test_retry_after_sets_the_cooldown_and_rate_limited_cools_too() -> None:
    cooldowns = LocalCooldowns(clock=Clock())
    the_planner = planner()
    flow = _flow(the_planner.plan(HELLO), cooldowns=cooldowns)
    _drive(
        flow,
        the_planner,
        {"primary": [_busy("rate_limited", retry_after_s=5.0)], "backup": [_ok("x", 0, 0, 0)]},
    )
    assert cooldowns.remaining(_key(the_planner, "primary")) == 5.0


def test_other_failures_do_not_cool_a_profile() -> None:
    cooldowns = LocalCooldowns(clock=Clock())
    the_planner = planner()
    flow = _flow(the_planner.plan(HELLO), cooldowns=cooldowns)
    _drive(flow, the_planner, {"primary": [_busy("server_error")], "backup": [_ok("x", 0, 0, 0)]})
    assert cooldowns.remaining(_key(the_planner, "primary")) == 0.0


def test_a_cooling_profile_in_the_middle_is_skipped_but_the_last_is_always_tried() -> None:
    cooldowns = LocalCooldowns(clock=Clock())
    the_planner = planner()
    cooldowns.cool(_key(the_planner, "backup"), 60)
    cooldowns.cool(_key(the_planner, "third"), 60)
    flow = _flow(the_planner.plan(HELLO), cooldowns=cooldowns)
    step = None
    flow.send(_busy("server_error"))
    step = flow.next_step()
    # Whether a profile's target cools down is known once it is prepared.
    assert isinstance(step, NextProfile)
    assert (step.profile, step.skipped) == ("backup", ())
    flow.send(the_planner.plan_fallback(step.origin, step.profile))
    step = flow.next_step()
    assert isinstance(step, NextProfile)
    assert (step.profile, step.skipped) == ("third", ("backup",))
    result, made = _drive(flow, the_planner, {"third": [_ok("x", 0, 0, 0)]})
    assert made == ["third:prepare", "third:initial"]
    assert [(f.profile, f.reason) for f in result.fallbacks] == [
        ("primary", "server_error"),
        ("backup", "cooldown"),
    ]


def test_a_cooling_first_profile_is_tried_after_all_when_nothing_after_it_can_be() -> None:
    """Cooldown only changes which profile is tried first; it never fails a run untried."""
    profiles = {**PROFILES, "primary": {"provider": "fake", "fallback": ["keyed"]}}
    cooldowns = LocalCooldowns(clock=Clock())
    the_planner = planner(profiles)
    cooldowns.cool(_key(the_planner, "primary"), 60)
    flow = _flow(the_planner.plan(HELLO), cooldowns=cooldowns)
    result, made = _drive(flow, the_planner, {"primary": [_ok("x", 0, 0, 0)]})
    assert made == ["keyed:prepare", "primary:initial"]
    assert result.prepared.profile == "primary"
    assert [f.profile for f in result.fallbacks] == ["keyed"]


def test_a_profile_without_a_chain_is_never_skipped() -> None:
    cooldowns = LocalCooldowns(clock=Clock())
    cooldowns.cool("lonely", 60)
    flow = _flow(
        planner().plan(RunRequest(prompt_id="hello", profile="lonely")), cooldowns=cooldowns
    )
    assert isinstance(flow.next_step(), Generate)


def test_the_requests_timeout_is_one_budget_for_the_whole_chain() -> None:
    """Each later profile gets what is left (its request's budget_s; its settings and hash are
    those of a run with the override)."""
    # Read at each fallback: 6 s in, then 12 s in.
    clock = FixedClock(START + timedelta(seconds=6), step=timedelta(seconds=6))
    the_planner = planner()
    request = RunRequest(prompt_id="hello", overrides=Overrides(timeout_s=10))
    flow = _flow(the_planner.plan(request), clock=clock)
    assert flow.next_step().request.budget_s is None  # type: ignore[union-attr]
    flow.send(_busy())
    step = flow.next_step()
    assert isinstance(step, NextProfile)
    backup = the_planner.plan_fallback(step.origin, step.profile)
    flow.send(backup)
    generate = flow.next_step()
    assert isinstance(generate, Generate)
    assert generate.request.budget_s == 4.0
    assert generate.plan.prepared == backup.prepared
    assert generate.plan.prepared.settings.timeout_s == 10
    # The budget is used up by the time the third profile is prepared: the last error stands.
    flow.send(_busy("timeout"))
    step = flow.next_step()
    assert isinstance(step, NextProfile)
    assert step.profile == "third"
    with pytest.raises(LLMGenerateError, match="scripted timeout") as caught:
        flow.send(the_planner.plan_fallback(step.origin, step.profile))
    assert [(f.profile, f.reason) for f in caught.value.fallbacks or ()] == [
        ("primary", "overloaded"),
        ("third", "timeout"),
    ]


def test_without_a_timeout_override_each_profile_keeps_its_own() -> None:
    clock = FixedClock(START, step=timedelta(seconds=400))
    the_planner = planner()
    flow = _flow(the_planner.plan(HELLO), clock=clock)
    flow.send(_busy())
    step = flow.next_step()
    assert isinstance(step, NextProfile)
    flow.send(the_planner.plan_fallback(step.origin, step.profile))
    generate = flow.next_step()
    assert isinstance(generate, Generate)
    assert generate.request.budget_s is None


def test_a_fallback_plan_leaves_the_first_profiles_target_overrides_and_key() -> None:
    """A direct key, a model and an endpoint override belong to the first profile; settings
    overrides apply to every profile."""
    the_planner = planner()
    origin = RunRequest(
        prompt_id="hello",
        api_key="sk-direct-key-for-the-first",
        overrides=Overrides(model="override-model", endpoint="http://127.0.0.1:9", max_tokens=77),
    )
    first = the_planner.plan(origin)
    assert first.prepared.target.model == "override-model"
    backup = the_planner.plan_fallback(origin, "backup")
    assert backup.prepared.target.model == "b-1"
    assert backup.prepared.target.endpoint is None
    assert backup.request.api_key is None
    assert backup.prepared.settings.max_tokens == 77
    assert backup.request.profile == "backup"
    assert backup.fallbacks == ()
