"""`scriptorium verify` and `run` through the real ``openai`` SDK against a loopback
OpenAI-compatible server: the shape of the bundled ``local`` profile, proven end to end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from scriptorium.cli import main
from scriptorium.testing import FakeOpenAIServer

KEY = "local-test-key-5d1e"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def root(tmp_path: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "hello.prompt.md").write_text(
        "---\nprofile: local\n---\nSay hello.\n", encoding="utf-8"
    )
    (tmp_path / "profiles" / "local.yaml").write_text(
        f"provider: openai\nmodel: local-model\nendpoint: {server.url}\n"
        "api_key_env: LOCAL_LLM_API_KEY\nsettings: {max_retries: 0}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("LOCAL_LLM_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_verify_makes_one_small_real_request(
    root: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.reply("OK")
    assert main(["verify", "-p", "local", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    assert report["provider"] == "openai"
    (request,) = server.requests
    assert request.body["model"] == "local-model"
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_verify_reports_a_refused_key_as_an_llm_failure_without_the_key(
    root: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.fail(401, code="invalid_api_key", message="bad key")
    assert main(["verify", "-p", "local"]) == 6
    captured = capsys.readouterr()
    assert captured.err.startswith("scriptorium: llm_generate: ")
    assert KEY not in captured.out + captured.err


def test_run_goes_to_the_profile_endpoint(
    root: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.reply("Hello from the local model")
    assert main(["run", "hello"]) == 0
    assert capsys.readouterr().out == "Hello from the local model\n"
    assert server.requests[0].body["messages"][-1]["content"] == "Say hello."
