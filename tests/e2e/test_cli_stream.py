"""``scriptorium run --stream``: text as it arrives, the parsed value at the end, events as JSON
lines with ``--json``, repair announced on stderr, and the usual exit codes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from scriptorium.cli import main
from scriptorium.testing import FakeAnthropicServer

KEY = "sk-ant-cli-stream-canary-0b7d"
GOOD = {"name": "Ada Lovelace", "email": "ada@example.com"}
SCHEMA = {
    "type": "object",
    "required": ["name", "email"],
    "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
}


def _write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    answers = [json.dumps({"name": "Ada"}), json.dumps(GOOD)]
    _write(
        tmp_path,
        {
            "prompts/contact.schema.json": json.dumps(SCHEMA),
            "prompts/contact.prompt.md": "---\nprofile: offline\noutput:\n  format: json_schema\n"
            "  schema: contact.schema.json\n  repair_attempts: 1\n---\nExtract: {{ text }}\n",
            "prompts/hello.prompt.md": "---\nprofile: claude\n---\nSay hello to {{ name }}.\n",
            "profiles/offline.yaml": "provider: fake\nmodel: demo\noptions:\n  responses:\n"
            + "".join(f"    - '{a}'\n" for a in answers),
            "profiles/good.yaml": f"provider: fake\nmodel: demo\noptions:\n  responses: ['{json.dumps(GOOD)}']\n",
        },
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_text_then_the_parsed_value(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A JSON prompt: its text as written, a newline, then the parsed value on its own line."""
    assert main(["run", "contact", "-p", "good", "-i", "text=Ada", "--stream"]) == 0
    out = capsys.readouterr().out
    text, value, rest = out.split("\n")
    assert json.loads(text) == GOOD
    assert json.loads(value) == GOOD
    assert rest == ""


def test_json_lines_per_event(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--json: one event per line, deltas adding up to the output, the result last."""
    assert main(["run", "contact", "-p", "good", "-i", "text=Ada", "--stream", "--json"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert events[0] == {"type": "attempt_started", "attempt": 1, "kind": "initial"}
    deltas = [e["text"] for e in events if e["type"] == "text_delta"]
    assert len(deltas) > 1
    assert events[-1]["type"] == "done"
    assert "".join(deltas) == events[-1]["result"]["output"]["text"]
    assert [e for e in events if e["type"] == "partial_value"][-1]["value"] == GOOD


def test_invalid_output_is_repaired_and_announced(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --repair the invalid first text is followed by the repair's, announced on stderr."""
    assert main(["run", "contact", "-i", "text=Ada", "--stream", "--repair"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert json.loads(lines[0]) == {"name": "Ada"}
    assert json.loads(lines[1]) == GOOD
    assert json.loads(lines[2]) == GOOD
    assert "repair attempt 2" in captured.err


def test_invalid_output_exits_1(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without repair the invalid output is written, then the output_invalid line and exit 1."""
    assert main(["run", "contact", "-i", "text=Ada", "--stream"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out.splitlines()[0]) == {"name": "Ada"}
    assert captured.err.startswith("scriptorium: output_invalid: ")


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(default_text=None) as fake:
        yield fake


def test_failure_mid_stream_exits_6_after_the_text(
    project: Path,
    server: FakeAnthropicServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Through the real SDK: the text that arrived is on stdout, the failure is exit 6."""
    _write(
        project,
        {
            "profiles/claude.yaml": f"provider: anthropic\nmodel: claude-sonnet-4-6\n"
            f"endpoint: {server.url}\napi_key_env: ANTHROPIC_API_KEY\n"
        },
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    server.fail_midstream("Hello, A", chunks=2)
    assert main(["run", "hello", "-i", "name=Ada", "--stream", "--json"]) == 6
    captured = capsys.readouterr()
    deltas = [json.loads(line) for line in captured.out.splitlines()]
    assert "".join(d["text"] for d in deltas if d["type"] == "text_delta") == "Hello, A"
    error = json.loads(captured.err)["error"]
    assert error["code"] == "llm_generate"
    assert error["partial_text"] == "Hello, A"
    assert KEY not in captured.err


def test_lone_surrogates_in_deltas_are_written_as_replacement_characters(
    project: Path,
    server: FakeAnthropicServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Text and JSON-lines output alike: U+FFFD where the model sent a lone surrogate, and the
    exit code of an invalid output (1), not an internal error."""
    _write(
        project,
        {
            "profiles/claude.yaml": f"provider: anthropic\nmodel: claude-sonnet-4-6\n"
            f"endpoint: {server.url}\napi_key_env: ANTHROPIC_API_KEY\n"
        },
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    for extra in ([], ["--json"]):
        server.reply("Hi \ud800 Ada", chunks=2)
        assert main(["run", "hello", "-i", "name=Ada", "--stream", *extra]) == 1
        out = capsys.readouterr().out
        if extra:
            deltas = [json.loads(line) for line in out.splitlines()]
            text = "".join(d["text"] for d in deltas if d["type"] == "text_delta")
        else:
            text = out
        assert "Hi \ufffd Ada" in text
