"""Cooldowns belong to the target actually called (provider, endpoint, model, key), never to a
profile name: a caller's own endpoint answering 429 with a long ``retry-after`` sidelines nobody
else, and a run made with the caller's own key never falls back onto the server's key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scriptorium import Engine, RunRequest
from scriptorium.errors import LLMGenerateError
from scriptorium.httpapi import create_app
from scriptorium.limits.cooldown import target_key
from scriptorium.llm.retry import RetryHooks
from scriptorium.testing import FakeOpenAIServer
from tests.httpapi.project import call

SERVER_KEY = "sk-server-own-key-5c81a0e2"
CLIENT_KEY = "sk-client-own-key-77d0b3f9"
HOOKS = RetryHooks(sleep=lambda _s: None, jitter=lambda _lo, _hi: 1.0)


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    with FakeOpenAIServer() as own, FakeOpenAIServer() as callers:
        yield own, callers


def _engine(tmp_path: Path, own_url: str) -> Engine:
    root = tmp_path / "p"
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "ask.prompt.md").write_text("---\nprofile: main\n---\nAsk.\n")
    for name, model, after in (("main", "gpt-4o", "fallback: [spare]\n"), ("spare", "m2", "")):
        (root / "profiles" / f"{name}.yaml").write_text(
            f"provider: openai\nmodel: {model}\nendpoint: {own_url}\n"
            f"api_key_env: SERVER_KEY\n{after}"
        )
    return Engine(root, env={"SERVER_KEY": SERVER_KEY}, retry_hooks=HOOKS)


def _keys_heard(server: FakeOpenAIServer) -> list[str]:
    return [r.headers.get("authorization", "") for r in server.requests]


def test_a_callers_endpoint_saying_busy_for_an_hour_sidelines_no_one(
    tmp_path: Path, servers: tuple[FakeOpenAIServer, FakeOpenAIServer]
) -> None:
    own, callers = servers
    app = create_app(_engine(tmp_path, own.url), allow_client_keys=True)
    callers.fail(429, code="rate_limit_exceeded", headers={"retry-after": "3600"})
    mine = {
        "prompt_id": "ask",
        "api_key": CLIENT_KEY,
        "overrides": {"endpoint": callers.url},
    }
    response = call(app, "POST", "/v1/runs", json=mine)
    assert response.status_code == 503, response.text
    # The caller's run stayed on the caller's key: the server's profiles were never called.
    assert own.requests == []
    assert _keys_heard(callers) == [f"Bearer {CLIENT_KEY}"]
    # Everyone else still gets the server's profile, on the server's key, nothing skipped.
    own.reply("fine")
    response = call(app, "POST", "/v1/runs", json={"prompt_id": "ask"})
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["prepared"]["profile"] == "main"
    assert result["fallbacks"] == []
    assert _keys_heard(own) == [f"Bearer {SERVER_KEY}"]


def test_the_servers_own_busy_target_is_skipped_for_later_runs(
    tmp_path: Path, servers: tuple[FakeOpenAIServer, FakeOpenAIServer]
) -> None:
    own, _ = servers
    engine = _engine(tmp_path, own.url)
    own.fail(429, code="rate_limit_exceeded", headers={"retry-after": "3600"})
    own.reply("from the spare")
    first = engine.run(RunRequest(prompt_id="ask"))
    assert [f.reason for f in first.fallbacks] == ["rate_limited"]
    own.reply("again the spare")
    second = engine.run(RunRequest(prompt_id="ask"))
    assert [f.reason for f in second.fallbacks] == ["cooldown"]
    assert second.output.text == "again the spare"


def test_a_client_keyed_run_is_not_chained(
    tmp_path: Path, servers: tuple[FakeOpenAIServer, FakeOpenAIServer]
) -> None:
    own, _ = servers
    engine = _engine(tmp_path, own.url)
    for _ in range(3):  # every attempt of the retry loop
        own.fail(503, code="server_error")
    with pytest.raises(LLMGenerateError) as caught:
        engine.run(RunRequest(prompt_id="ask", api_key=CLIENT_KEY))
    assert caught.value.reason == "server_error"
    assert len(own.requests) == 3
    assert _keys_heard(own) == [f"Bearer {CLIENT_KEY}"] * len(own.requests)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            (("openai", "http://a"), ("k1-longer-key",)),
            (("openai", "http://b"), ("k1-longer-key",)),
        ),
        (
            (("openai", "http://a"), ("k1-longer-key",)),
            (("openai", "http://a"), ("k2-longer-key",)),
        ),
        (
            (("openai", "http://a"), ("k1-longer-key",)),
            (("gemini", "http://a"), ("k1-longer-key",)),
        ),
        ((("openai", None), ()), (("openai", None), ("k1-longer-key",))),
    ],
)
def test_targets_differ_by_provider_endpoint_and_key_and_never_hold_it(
    a: tuple[tuple[str, str | None], tuple[str, ...]],
    b: tuple[tuple[str, str | None], tuple[str, ...]],
) -> None:
    first = target_key(*a[0], a[1], model="m")
    second = target_key(*b[0], b[1], model="m")
    assert first != second
    for key, secrets in ((first, a[1]), (second, b[1])):
        assert all(secret not in key for secret in secrets)
