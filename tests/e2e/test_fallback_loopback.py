"""Fallback chains from outside: an Engine over a project whose profiles point at three loopback
servers (two Anthropic, one OpenAI), called through the real SDKs. Every ``fallback_on`` reason
moves on and every other error does not; attempts, fallbacks, usage and cost are exact; a busy
profile cools down for the engine's later runs and a batch's rows; a stream switches only before
its first delta; the request's ``timeout_s`` is one budget for the whole chain."""

from __future__ import annotations

import asyncio
import json
import logging
import pickle
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from scriptorium import Engine, RunRequest
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import Usage
from scriptorium.testing import FakeAnthropicServer
from scriptorium.usecase.events import AttemptStarted, Done, TextDelta
from scriptorium.usecase.model import FallbackRecord, RunResult
from tests.e2e.fallback_support import (
    BACKUP_MODEL,
    GPT_MODEL,
    PRIMARY_MODEL,
    Servers,
    cost,
    drop_engines,
    keys,
    servers,
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    with servers(tmp_path_factory.mktemp("fallback")) as running:
        yield running


@pytest.fixture
def loop(project: Servers) -> Iterator[Servers]:
    project.reset()
    yield project
    drop_engines()


def _engine(loop: Servers, *, repair: bool = False) -> Engine:
    return Engine(loop.root, env=keys(), repair=repair)


def _fail_connection(server: FakeAnthropicServer) -> None:
    server.reset_connection()


FAILURES: dict[str, Callable[[FakeAnthropicServer], None]] = {
    "rate_limited": lambda s: s.fail(429),
    "overloaded": lambda s: s.fail(529),
    "server_error": lambda s: s.fail(500),
    "timeout": lambda s: s.fail(504),
    "quota": lambda s: s.fail(402),
    "connection": _fail_connection,
}
NOT_MOVING: dict[str, Callable[[FakeAnthropicServer], None]] = {
    "invalid_request": lambda s: s.fail(400),
    "auth": lambda s: s.fail(401),
    "permission": lambda s: s.fail(403),
    "not_found": lambda s: s.fail(404),
    "context_window": lambda s: s.fail(400, message="prompt is too long: 300000 tokens"),
}


@pytest.mark.parametrize("reason", sorted(FAILURES))
def test_every_default_reason_moves_the_run_to_the_next_profile(loop: Servers, reason: str) -> None:
    FAILURES[reason](loop.primary)
    loop.backup.reply("Hello!", usage={"input_tokens": 12, "output_tokens": 3})
    result = _engine(loop).run("hello", inputs={"name": "Ada"})
    assert result.output.text == "Hello!"
    assert loop.calls() == (1, 1, 0)
    [left] = result.fallbacks
    assert (left.profile, left.provider, left.model) == ("primary", "anthropic", PRIMARY_MODEL)
    assert (left.code, left.reason, left.attempts) == ("llm_generate", reason, 1)
    assert result.prepared.profile == "backup"


@pytest.mark.parametrize("reason", sorted(NOT_MOVING))
def test_every_other_error_is_raised_without_trying_another_profile(
    loop: Servers, reason: str
) -> None:
    NOT_MOVING[reason](loop.primary)
    with pytest.raises(LLMGenerateError) as caught:
        _engine(loop).run("hello")
    assert caught.value.reason == reason
    assert caught.value.fallbacks is None
    assert loop.calls() == (1, 0, 0)


def test_attempts_fallbacks_usage_and_cost_are_exact_across_three_profiles(loop: Servers) -> None:
    loop.primary.fail(529, headers={"retry-after": "0"})
    loop.backup.fail(500)
    loop.gpt.reply("Hi there!", prompt_tokens=20, completion_tokens=4)
    engine = _engine(loop)
    result = engine.run("hello", inputs={"name": "Ada"})
    assert loop.calls() == (1, 1, 1)
    assert [(f.profile, f.provider, f.model, f.reason, f.attempts) for f in result.fallbacks] == [
        ("primary", "anthropic", PRIMARY_MODEL, "overloaded", 1),
        ("backup", "anthropic", BACKUP_MODEL, "server_error", 1),
    ]
    [attempt] = result.attempts
    assert (attempt.profile, attempt.provider, attempt.model) == ("gpt", "openai", GPT_MODEL)
    assert result.usage == Usage(
        input_tokens=20, output_tokens=4, cost_micro=cost("gpt", 20, 4), llm_calls=3
    )
    assert result.usage.cost_micro == 20 * 2 + 4 * 8
    # The answering profile's request: what was really sent (caches and cassettes key on it).
    first = engine.prepare("hello", inputs={"name": "Ada"})
    assert result.prepared.profile == "gpt"
    assert result.prepared.request_hash != first.request_hash
    assert result.fallbacks[0].request_hash == first.request_hash
    assert result.model == GPT_MODEL


def test_every_profile_failing_raises_the_last_error_with_the_fallbacks_and_usage(
    loop: Servers,
) -> None:
    loop.primary.fail(529)
    loop.backup.fail(429)
    loop.gpt.fail(500)
    with pytest.raises(LLMGenerateError) as caught:
        _engine(loop).run("hello")
    error = caught.value
    assert (error.reason, error.provider) == ("server_error", "openai")
    assert [(f.profile, f.reason) for f in error.fallbacks or ()] == [
        ("primary", "overloaded"),
        ("backup", "rate_limited"),
    ]
    assert error.usage is not None
    assert error.usage.llm_calls == 3
    # The same objects a RunResult holds, not their JSON form; which to_dict and pickling give.
    assert isinstance(error.usage, Usage)
    assert all(isinstance(f, FallbackRecord) for f in error.fallbacks or ())
    wire = error.to_dict()
    assert wire["usage"]["llm_calls"] == 3
    assert [f["profile"] for f in wire["fallbacks"]] == ["primary", "backup"]
    json.dumps(wire)
    again = pickle.loads(pickle.dumps(error))
    assert again.usage == error.usage
    assert again.fallbacks == error.fallbacks


def test_invalid_output_after_the_profiles_repairs_moves_on_and_both_are_paid_for(
    loop: Servers,
) -> None:
    loop.primary.reply("not json", usage={"input_tokens": 10, "output_tokens": 2})
    loop.primary.reply("still not", usage={"input_tokens": 30, "output_tokens": 2})
    loop.backup.reply('{"name": "Ada"}', usage={"input_tokens": 11, "output_tokens": 5})
    result = _engine(loop, repair=True).run("contact")
    assert result.validation.valid
    assert result.validation.value == {"name": "Ada"}
    assert loop.calls() == (2, 1, 0)
    [left] = result.fallbacks
    assert (left.profile, left.code, left.reason, left.attempts) == (
        "picky",
        "output_invalid",
        "invalid_output",
        2,
    )
    assert [(a.profile, a.kind, a.valid) for a in result.attempts] == [
        ("picky", "initial", False),
        ("picky", "repair", False),
        ("backup", "initial", True),
    ]
    assert result.usage.cost_micro == (
        cost("primary", 10, 2) + cost("primary", 30, 2) + cost("backup", 11, 5)
    )
    assert result.usage.llm_calls == 3


def test_a_busy_profile_cools_down_for_the_engines_later_runs(loop: Servers) -> None:
    loop.primary.fail(429, headers={"retry-after": "60"})
    engine = _engine(loop)
    first = engine.run("hello")
    second = engine.run("hello")
    assert loop.calls() == (1, 2, 0)  # the second run never asked the busy profile
    assert [f.reason for f in first.fallbacks] == ["rate_limited"]
    [skipped] = second.fallbacks
    assert (skipped.profile, skipped.code, skipped.reason, skipped.attempts) == (
        "primary",
        "cooldown",
        "cooldown",
        0,
    )
    assert skipped.retry_after_s is not None
    assert 55 < skipped.retry_after_s <= 60
    # Another engine has its own table: it asks the profile again.
    loop.primary.reply("back")
    assert _engine(loop).run("hello").output.text == "back"


def test_cooldown_skips_the_busy_profile_across_a_batchs_threads(loop: Servers) -> None:
    for _ in range(8):
        loop.primary.fail(529, headers={"retry-after": "60"})
    requests = [RunRequest(prompt_id="hello", inputs={"name": f"n{i}"}) for i in range(8)]
    results = _engine(loop).run_many(requests, concurrency=2)
    assert all(isinstance(r, RunResult) for r in results)
    done = [r for r in results if isinstance(r, RunResult)]
    asked = len(loop.primary.requests)
    assert 1 <= asked <= 2  # at most the rows already in flight when the first said "busy"
    reasons = sorted(r.fallbacks[0].reason for r in done)
    assert reasons == ["cooldown"] * (8 - asked) + ["overloaded"] * asked
    assert all(r.prepared.profile == "backup" for r in done)


def test_a_stream_switches_before_its_first_delta_and_announces_the_next_attempt(
    loop: Servers,
) -> None:
    loop.primary.fail(529)
    loop.backup.reply("Hello there, Ada!", chunks=3)
    events = list(_engine(loop).stream("hello", inputs={"name": "Ada"}))
    started = [e for e in events if isinstance(e, AttemptStarted)]
    # The failed generation has no place in the result's attempts: the next profile's is 1 too.
    assert [(e.attempt, e.kind) for e in started] == [(1, "initial"), (1, "initial")]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there, Ada!"
    done = events[-1]
    assert isinstance(done, Done)
    assert [f.reason for f in done.result.fallbacks] == ["overloaded"]
    assert done.result.prepared.profile == "backup"


def test_an_async_stream_switches_the_same_way(loop: Servers) -> None:
    loop.primary.fail(500)
    loop.backup.reply("Hi!")

    async def go() -> list[object]:
        return [event async for event in _engine(loop).astream("hello")]

    events = asyncio.run(go())
    done = events[-1]
    assert isinstance(done, Done)
    assert done.result.output.text == "Hi!"
    assert [f.reason for f in done.result.fallbacks] == ["server_error"]


def test_a_stream_that_has_started_never_switches(loop: Servers) -> None:
    loop.primary.fail_midstream("Hel", chunks=1)
    stream = _engine(loop).stream("hello")
    seen: list[str] = []

    def read() -> None:
        seen.extend(event.text for event in stream if isinstance(event, TextDelta))

    with pytest.raises(LLMGenerateError) as caught:
        read()
    assert "".join(seen) == "Hel"
    assert caught.value.reason == "overloaded"
    assert caught.value.partial_text == "Hel"
    assert loop.calls() == (1, 0, 0)


def test_the_requests_timeout_is_one_budget_for_the_whole_chain(loop: Servers) -> None:
    loop.primary.fail(529, delay_s=1.5)
    loop.backup.delay(5.0, "too late")
    began = time.monotonic()
    with pytest.raises(LLMGenerateError) as caught:
        _engine(loop).run("hello", overrides={"timeout_s": 2.5})
    took = time.monotonic() - began
    assert caught.value.reason == "timeout"
    # The backup timed out on what was left of 2.5 s (about 1 s), not its own 20 s nor a fresh
    # 2.5 s; nothing was left for the last profile, which is recorded as not tried.
    assert [(f.profile, f.reason) for f in caught.value.fallbacks or ()] == [
        ("primary", "overloaded"),
        ("gpt", "timeout"),
    ]
    assert caught.value.fallbacks is not None
    assert caught.value.fallbacks[1].attempts == 0
    assert loop.calls() == (1, 1, 0)
    assert took < 4.0


def test_each_fallback_is_logged_at_info(loop: Servers, caplog: pytest.LogCaptureFixture) -> None:
    loop.primary.fail(529)
    with caplog.at_level(logging.INFO, logger="scriptorium"):
        _engine(loop).run("hello")
    lines = [r.getMessage() for r in caplog.records if r.name == "scriptorium.runner"]
    assert any("falling back from primary to backup after overloaded" in m for m in lines), lines


def test_an_unpreparable_profile_of_the_chain_is_recorded_and_the_chain_goes_on(
    loop: Servers,
) -> None:
    loop.primary.fail(529)
    loop.gpt.reply("from gpt")
    env = {k: v for k, v in keys().items() if k != "FALLBACK_TEST_BACKUP_KEY"}
    result = Engine(loop.root, env=env).run("hello")
    assert result.output.text == "from gpt"
    assert [(f.profile, f.code) for f in result.fallbacks] == [
        ("primary", "llm_generate"),
        ("backup", "api_key_env_missing"),
    ]
    assert loop.calls() == (1, 0, 1)


def test_a_chain_that_does_not_load_refuses_the_run_and_check_reports_it(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "hi.prompt.md").write_text("---\nprofile: a\n---\nHi.\n", "utf-8")
    responses = "options: {responses: [ok]}\n"
    for name, chain in {"a": "[b]", "b": "[a]", "c": "[ghost]"}.items():
        text = f"provider: fake\nmodel: m\nfallback: {chain}\n{responses}"
        (tmp_path / "profiles" / f"{name}.yaml").write_text(text, "utf-8")
    engine = Engine(tmp_path)
    from scriptorium.errors import ProfileLoadError

    with pytest.raises(ProfileLoadError, match="loops"):
        engine.run("hi")
    found = {(p.file, p.kind): p.message for p in engine.check() if p.kind == "profile_invalid"}
    assert "loops (a -> b -> a)" in found[("profiles/a.yaml", "profile_invalid")]
    assert "'ghost' does not load" in found[("profiles/c.yaml", "profile_invalid")]
