"""``--reasoning LEVEL`` and ``--reasoning-budget N``: shown by ``prepare`` with their source and as
sent, carried to the body by ``run``, and ``run --stream`` writing the reasoning to stderr only
when stderr is a terminal (stdout stays the answer)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from scriptorium.cli import main
from scriptorium.testing import FakeAnthropicServer

KEY = "sk-ant-cli-reasoning-canary-9b2c"


class Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def shared() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(default_text=None) as server:
        yield server


@pytest.fixture
def server(shared: FakeAnthropicServer) -> FakeAnthropicServer:
    shared.reset()
    return shared


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: FakeAnthropicServer) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "greet.prompt.md").write_text(
        "---\nprofile: claude\n---\nHello {{ name }}!\n", encoding="utf-8"
    )
    (tmp_path / "profiles" / "claude.yaml").write_text(
        f"provider: anthropic\nmodel: claude-sonnet-4-6\nendpoint: {server.url}\n"
        "api_key_env: ANTHROPIC_API_KEY\nsettings: {max_tokens: 8000, max_retries: 0}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return tmp_path


def test_prepare_shows_the_level_its_source_and_what_is_sent(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prepare", "greet", "-i", "name=Ada", "--reasoning", "xhigh", "--json"]) == 0
    prepared = json.loads(capsys.readouterr().out)
    assert prepared["settings"]["reasoning"] == "xhigh"
    assert prepared["settings_sources"]["reasoning"] == "override"
    assert prepared["reasoning"]["sent"] == {
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "high"},
    }
    assert main(["prepare", "greet", "-i", "name=Ada", "--reasoning", "xhigh"]) == 0
    text = capsys.readouterr().out
    assert "  reasoning               xhigh        (override)" in text
    assert (
        'reasoning  sent {"output_config": {"effort": "high"}, "thinking": {"type": "adaptive"}}'
        in text
    )
    assert "sent as effort 'high'" in text


def test_prepare_says_why_a_budget_is_ignored(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "prepare",
        "greet",
        "-i",
        "name=Ada",
        "--reasoning",
        "low",
        "--reasoning-budget",
        "2048",
    ]
    assert main(args) == 0
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if "reasoning_budget_tokens" in x)
    assert "2048" in line
    assert "ignored: " in line
    assert "takes no token budget" in line


def test_run_sends_the_level(
    root: Path, server: FakeAnthropicServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.reply("Hello, Ada.", thinking="Be kind.")
    assert main(["run", "greet", "-i", "name=Ada", "--reasoning", "high"]) == 0
    assert capsys.readouterr().out == "Hello, Ada.\n"
    body = server.requests[0].body
    assert (body["thinking"], body["output_config"]) == ({"type": "adaptive"}, {"effort": "high"})


def test_an_unknown_level_is_a_usage_error(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "greet", "-i", "name=Ada", "--reasoning", "extreme"]) == 2
    assert "--reasoning" in capsys.readouterr().err


def test_streamed_reasoning_goes_to_a_terminals_stderr_only(
    root: Path,
    server: FakeAnthropicServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = ["run", "greet", "-i", "name=Ada", "--reasoning", "low", "--stream"]
    server.reply("Hello, Ada.", thinking="Be kind.", chunks=2)
    assert main(args) == 0
    assert capsys.readouterr() == ("Hello, Ada.\n", "")
    server.reply("Hello, Ada.", thinking="Be kind.", chunks=2)
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(args) == 0
    assert capsys.readouterr().out == "Hello, Ada.\n"
    assert terminal.getvalue().startswith("Be kind.\n")


def test_streamed_json_events_include_reasoning_deltas(
    root: Path, server: FakeAnthropicServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.reply("Hello, Ada.", thinking="Be kind.", chunks=2)
    assert main(["run", "greet", "-i", "name=Ada", "--reasoning", "low", "--stream", "--json"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    types = [e["type"] for e in events]
    assert types.index("reasoning_delta") < types.index("text_delta")
    assert events[-1]["result"]["output"]["reasoning"] == "Be kind."
