"""The kernel's ``result`` line and what a replayed answer charges, as a supervisor sees them from a
real ``python -m scriptorium.kernel`` subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scriptorium import Engine

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60

EXTRACT = """---
profile: taped
output:
  format: json_schema
  schema: {type: object, required: [name], properties: {name: {type: string}}}
---
Who wrote the notes?
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "who.prompt.md").write_text(EXTRACT, encoding="utf-8")
    (tmp_path / "profiles" / "taped.yaml").write_text(
        "provider: replay\nmodel: claude-sonnet-4-6\noptions: {cassette: tape.jsonl}\n",
        encoding="utf-8",
    )
    request_hash = Engine(tmp_path).prepare("who").request_hash
    recorded = {
        "text": '{"name": "Ada"}',
        "model": "claude-sonnet-4-6",
        "usage": {"input_tokens": 40, "output_tokens": 8, "cost_micro": 240, "llm_calls": 1},
        "attempts": 1,
    }
    line = {"hash_version": 2, "request_hash": request_hash, "request": {}, "response": recorded}
    (tmp_path / "profiles" / "tape.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    return tmp_path


def kernel(payload: dict[str, Any], cwd: Path, **env: str) -> list[dict[str, Any]]:
    environ = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO), **env}
    proc = subprocess.run(
        [sys.executable, "-m", "scriptorium.kernel"],
        input=json.dumps({"op": "init", "payload": payload}) + "\n",
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_a_prompt_run_sends_the_whole_result_just_before_exit(project: Path) -> None:
    """The ``result`` line holds the parsed value, the hashes and the usage, not 200 characters."""
    messages = kernel(
        {"prompt_id": "who", "root": str(project)}, project, CC_LLM_PROVIDER="profile"
    )
    assert [m["op"] for m in messages][-3:] == ["iteration_done", "result", "exit"]
    result = messages[-2]["result"]
    assert result["validation"]["value"] == {"name": "Ada"}
    assert result["prepared"]["request_hash"].startswith("sha256:")
    assert result["usage"]["input_tokens"] == 40


def test_a_replayed_answer_charges_nothing_and_says_replayed(project: Path) -> None:
    messages = kernel(
        {"prompt_id": "who", "root": str(project)}, project, CC_LLM_PROVIDER="profile"
    )
    charges = [m for m in messages if m["op"] == "charge"]
    assert charges == [
        {"op": "charge", "dim": "tokens", "amount": 0},
        {"op": "charge", "dim": "cost_micro", "amount": 0},
    ]
    result = messages[-2]["result"]
    assert result["metadata"]["replayed"] is True
    assert result["usage"]["cost_micro"] == 0


def test_a_raw_payload_has_no_result_line() -> None:
    mock = {"text": "hi", "tokens_input": 1, "tokens_output": 1, "cost_micro": 1, "model": "m"}
    messages = kernel(
        {"model": "m", "user": "hello"},
        REPO,
        CC_LLM_PROVIDER="mock",
        CC_LLM_MOCK_RESPONSE_JSON=json.dumps(mock),
    )
    assert "result" not in [m["op"] for m in messages]


def test_a_missing_prompt_is_reported_with_its_reason(project: Path) -> None:
    """The error object of the log line carries ``reason`` (here ``not_found``), exit code 2."""
    environ = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "scriptorium.kernel"],
        input=json.dumps({"op": "init", "payload": {"prompt_id": "ghost"}}) + "\n",
        cwd=project,
        env={**environ, "CC_LLM_PROVIDER": "profile"},
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert proc.returncode == 2
    last = json.loads(proc.stdout.splitlines()[-1])
    assert last["level"] == "error"
    assert last["error"]["code"] == "prompt_load"
    assert last["error"]["reason"] == "not_found"
