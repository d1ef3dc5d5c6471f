"""A replay profile may name the key its recording needs: replaying needs no key, recording does."""

from __future__ import annotations

from pathlib import Path

import pytest

from scriptorium import Engine, errors
from scriptorium.testing import FakeAnthropicServer

KEY = "sk-ant-record-5d1e9b7a"


def _project(root: Path, endpoint: str) -> None:
    (root / "prompts").mkdir()
    (root / "profiles").mkdir()
    (root / "prompts" / "hi.prompt.md").write_text(
        "---\noutput: {format: text}\n---\n## user\nSay hi\n", encoding="utf-8"
    )
    for mode in ("record", "replay"):
        (root / "profiles" / f"{mode}.yaml").write_text(
            "provider: replay\nmodel: claude-sonnet-4-6\napi_key_env: ANTHROPIC_API_KEY\n"
            f"endpoint: {endpoint}\n"
            "options: {cassette: cassettes/hi.jsonl, record_provider: anthropic, "
            f"mode: {mode}}}\n",
            encoding="utf-8",
        )


def test_a_recorded_answer_replays_without_the_recording_key(tmp_path: Path) -> None:
    with FakeAnthropicServer() as server:
        _project(tmp_path, server.base_url)
        server.reply("Hi there")
        recorded = Engine(tmp_path, env={"ANTHROPIC_API_KEY": KEY}).run("hi", profile="record")
        sent = server.requests[0].headers
        assert KEY in (sent.get("x-api-key") or sent.get("authorization", ""))
        replayed = Engine(tmp_path, env={}).run("hi", profile="replay")
        assert len(server.requests) == 1
    assert replayed.output.text == recorded.output.text == "Hi there"
    assert replayed.prepared.request_hash == recorded.prepared.request_hash
    assert KEY not in (tmp_path / "profiles" / "cassettes" / "hi.jsonl").read_text("utf-8")


def test_a_set_variable_is_still_read_when_replaying(tmp_path: Path) -> None:
    """The variable is passed over only when unset: a set one is a key like any other (a short
    value included), read as the profile names it."""
    _project(tmp_path, "http://127.0.0.1:9")
    engine = Engine(tmp_path, env={"ANTHROPIC_API_KEY": "short"})
    prepared = engine.prepare("hi", profile="replay")
    assert (prepared.target.api_key_env, prepared.target.api_key_source) == (
        "ANTHROPIC_API_KEY",
        "profile",
    )


def test_recording_without_the_key_is_refused_before_any_call(tmp_path: Path) -> None:
    with FakeAnthropicServer() as server:
        _project(tmp_path, server.base_url)
        with pytest.raises(errors.APIKeyEnvMissingError) as caught:
            Engine(tmp_path, env={}).run("hi", profile="record")
        assert caught.value.env_var == "ANTHROPIC_API_KEY"
        assert server.requests == []
