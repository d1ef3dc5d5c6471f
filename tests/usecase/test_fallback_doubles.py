"""The test doubles that let an engine unit-test failover offline: ``FakeClient(by_profile=...)``
and the ``fake`` provider's ``options.fail``; and the request fields a chain adds
(``LLMRequest.profile`` and ``budget_s``), which change no request hash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scriptorium import Engine
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import LLMRequest, Target
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message
from scriptorium.testing import FakeClient, UnexpectedCall

PROMPT = "---\nprofile: primary\n---\nSay hello.\n"


def _project(root: Path, primary_options: dict[str, Any] | None = None) -> Path:
    (root / "prompts").mkdir()
    (root / "profiles").mkdir()
    (root / "prompts" / "hello.prompt.md").write_text(PROMPT, "utf-8")
    options = primary_options or {"responses": ["from the primary"]}
    primary = {"provider": "fake", "model": "p-1", "fallback": ["backup"], "options": options}
    backup = {"provider": "fake", "model": "b-1", "options": {"responses": ["from the backup"]}}
    (root / "profiles" / "primary.yaml").write_text(json.dumps(primary), "utf-8")
    (root / "profiles" / "backup.yaml").write_text(json.dumps(backup), "utf-8")
    return root


def test_fake_client_scripts_each_profile_apart(tmp_path: Path) -> None:
    client = FakeClient(
        by_profile={
            "primary": [LLMGenerateError("busy", reason="overloaded", attempts=2)],
            "backup": ["ok from the backup"],
        }
    )
    result = Engine(_project(tmp_path), client=client).run("hello")
    assert result.output.text == "ok from the backup"
    assert [r.profile for r in client.requests] == ["primary", "backup"]
    [left] = result.fallbacks
    assert (left.profile, left.reason, left.attempts) == ("primary", "overloaded", 2)
    assert result.usage.llm_calls == 3


def test_fake_client_profiles_without_a_script_of_their_own_take_the_shared_one(
    tmp_path: Path,
) -> None:
    client = FakeClient(["shared"], by_profile={"backup": ["unused"]})
    assert Engine(_project(tmp_path), client=client).run("hello").output.text == "shared"


def test_fake_client_an_empty_profile_script_names_the_profile(tmp_path: Path) -> None:
    client = FakeClient(by_profile={"primary": []})
    with pytest.raises(UnexpectedCall, match="on profile 'primary'"):
        Engine(_project(tmp_path), client=client).run("hello")


def test_the_fake_providers_scripted_failure_falls_back_and_cools_the_profile(
    tmp_path: Path,
) -> None:
    fail = [{"reason": "overloaded", "retry_after_s": 5, "attempts": 2, "http_status": 529}]
    root = _project(tmp_path, {"fail": fail, "responses": ["from the primary"]})
    engine = Engine(root)
    first = engine.run("hello")
    assert first.output.text == "from the backup"
    [left] = first.fallbacks
    assert (left.profile, left.reason, left.attempts, left.retry_after_s) == (
        "primary",
        "overloaded",
        2,
        5,
    )
    second = engine.run("hello")
    [skipped] = second.fallbacks
    assert skipped.reason == "cooldown"
    assert skipped.retry_after_s is not None
    assert 0 < skipped.retry_after_s <= 5
    # A fresh engine has its own cooldowns and its own fake client, whose script starts over.
    assert [f.reason for f in Engine(root).run("hello").fallbacks] == ["overloaded"]


def test_fail_without_responses_fails_every_call_with_its_last_entry(tmp_path: Path) -> None:
    root = _project(tmp_path, {"fail": [{"reason": "server_error"}, {"reason": "timeout"}]})
    engine = Engine(root)
    assert [f.reason for f in engine.run("hello").fallbacks] == ["server_error"]
    assert [f.reason for f in engine.run("hello").fallbacks] == ["timeout"]
    assert [f.reason for f in engine.run("hello").fallbacks] == ["timeout"]


def test_check_reports_a_malformed_fail_list(tmp_path: Path) -> None:
    root = _project(tmp_path, {"fail": [{"reason": "busy"}], "responses": ["x"]})
    messages = [p.message for p in Engine(root).check() if p.file == "profiles/primary.yaml"]
    assert any("options.fail[0]: reason must be one of" in m for m in messages), messages


def test_the_profile_and_the_budget_of_a_request_are_not_hashed() -> None:
    plain = LLMRequest(
        target=Target(provider="fake", model="m"),
        messages=[Message(role="user", content="hi")],
        settings=ExecutionSettings(),
    )
    marked = plain.model_copy(update={"profile": "primary", "budget_s": 1.5})
    assert marked.hash_form() == plain.hash_form()


def test_a_budget_bounds_the_retry_loop_of_an_sdk_call() -> None:
    from scriptorium.llm.anthropic.call import Call
    from scriptorium.llm.retry import RetryHooks

    request = LLMRequest(
        target=Target(provider="anthropic", model="claude-sonnet-4-5"),
        messages=[Message(role="user", content="hi")],
        settings=ExecutionSettings(timeout_s=30, max_retries=2),
        api_key="sk-ant-test-key-0123456789",
    )
    assert Call(request).retry_args(RetryHooks())["policy"].timeout_s == 30
    bounded = request.model_copy(update={"budget_s": 4.0})
    assert Call(bounded).retry_args(RetryHooks())["policy"].timeout_s == 4.0
