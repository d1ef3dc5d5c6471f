"""The command line doing what a user at a shell expects, run as a subprocess: the parsed value of a
JSON prompt on stdout, ``--raw``, ``-i`` typed by the prompt's schema, ``--repair`` meaning at least
one attempt, not-found messages that say where they looked, ``list``/``check`` outside a project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60
FENCED = 'Here you go:\n```json\n{"name": "Ada", "age": 36}\n```'

PROMPTS = {
    "person": """---
profile: chatty
output:
  format: json_schema
  schema: {type: object, required: [name, age], properties: {name: {type: string}, age: {type: integer}}}
---
Who?
""",
    "norepair": """---
profile: fixer
output:
  format: json
  repair_attempts: 0
---
Give JSON.
""",
    "lookup": """---
profile: chatty
inputs:
  type: object
  required: [id]
  properties:
    id: {type: string}
    limit: {type: integer}
    tags: {type: array, items: {type: string}}
---
Find {{ id }} ({{ id is string }}), limit {{ limit | default('none') }}, tags {{ tags | default([]) | length }}.
""",
    "plain": """---
profile: claude
---
Hello.
""",
}
PROFILES = {
    "chatty": f"provider: fake\nmodel: fake-1\noptions: {{responses: [{json.dumps(FENCED)}]}}\n",
    "fixer": 'provider: fake\noptions: {responses: ["not json at all", "{\\"ok\\": true}"]}\n',
    "claude": "provider: anthropic\nmodel: claude-sonnet-4-6\napi_key_env: TEST_KEY_VAR\n"
    "settings: {temperature: 0.3}\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for folder, files, suffix in (
        ("prompts", PROMPTS, ".prompt.md"),
        ("profiles", PROFILES, ".yaml"),
    ):
        for name, text in files.items():
            path = root / folder / (name + suffix)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return root


def cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "PYTHONPATH"
    }
    environ.update(PYTHONPATH=str(REPO), **env)
    return subprocess.run(
        [sys.executable, "-m", "scriptorium", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def test_run_of_a_json_prompt_prints_the_parsed_value(project: Path) -> None:
    """Prose and a code fence around the answer: stdout is still just the JSON value."""
    done = cli("run", "person", cwd=project)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "Ada", "age": 36}


def test_raw_prints_the_model_text_and_json_the_whole_result(project: Path) -> None:
    raw = cli("run", "person", "--raw", cwd=project)
    assert raw.returncode == 0, raw.stderr
    assert raw.stdout == FENCED + "\n"
    whole = cli("run", "person", "--json", cwd=project)
    result = json.loads(whole.stdout)
    assert result["validation"]["value"] == {"name": "Ada", "age": 36}
    assert result["metadata"]["ignored_settings"] == []


def test_inputs_are_typed_by_the_prompt_schema(project: Path) -> None:
    """``-i id=123`` for a string input is the text 123; integers and arrays parse as JSON."""
    done = cli(
        "prepare",
        "lookup",
        "-i",
        "id=123",
        "-i",
        "limit=5",
        "-i",
        'tags=["a","b"]',
        "--json",
        cwd=project,
    )
    assert done.returncode == 0, done.stderr
    prepared = json.loads(done.stdout)
    assert prepared["messages"][0]["content"] == "Find 123 (True), limit 5, tags 2."


def test_a_mistyped_input_name_fails_naming_it(project: Path) -> None:
    done = cli("prepare", "lookup", "-i", "id=1", "-i", "limt=5", cwd=project)
    assert done.returncode == 2
    assert "'limt'" in done.stderr
    assert "'limit'" in done.stderr


def test_repair_means_at_least_one_attempt(project: Path) -> None:
    """The prompt sets ``repair_attempts: 0``; ``--repair`` still repairs once."""
    plain = cli("run", "norepair", cwd=project)
    assert plain.returncode == 1
    repaired = cli("run", "norepair", "--repair", "--json", cwd=project)
    assert repaired.returncode == 0, repaired.stderr
    result = json.loads(repaired.stdout)
    assert result["validation"]["repaired"] is True
    assert result["validation"]["value"] == {"ok": True}


def test_prepare_marks_settings_the_provider_does_not_take(project: Path) -> None:
    done = cli("prepare", "plain", cwd=project, TEST_KEY_VAR="not-a-real-key-123")
    assert done.returncode == 0, done.stderr
    line = next(ln for ln in done.stdout.splitlines() if ln.strip().startswith("temperature"))
    assert "ignored" in line
    assert "(profile" in line
    assert "not-a-real-key-123" not in done.stdout


def test_not_found_names_the_directory_searched(project: Path, tmp_path: Path) -> None:
    missing = cli("run", "nope", cwd=project)
    assert missing.returncode == 4
    assert str(project / "prompts") in missing.stderr
    elsewhere = cli("run", "person", cwd=tmp_path)
    assert elsewhere.returncode == 4
    assert str(tmp_path / "prompts") in elsewhere.stderr
    profile = cli("run", "person", "-p", "ghost", cwd=project)
    assert profile.returncode == 4
    assert str(project / "profiles") in profile.stderr


@pytest.mark.parametrize("command", ["list", "check"])
def test_list_and_check_outside_a_project_exit_2_saying_so(command: str, tmp_path: Path) -> None:
    done = cli(command, cwd=tmp_path)
    assert done.returncode == 2
    assert "prompts/" in done.stderr
    assert done.stdout == ""


def test_a_batch_output_of_the_old_hash_form_is_refused_not_rerun(
    project: Path, tmp_path: Path
) -> None:
    """Results recorded when the hash covered the endpoint cannot match; say so, run nothing."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    old = {"line": 1, "id": 1, "request_hash": "sha256:00", "valid": True, "result": {}}
    out.write_text(json.dumps(old) + "\n", encoding="utf-8")
    done = cli("batch", "person", "--in", str(source), "--out", str(out), cwd=project)
    assert done.returncode == 2
    assert "hash form 1" in done.stderr
    assert json.loads(out.read_text(encoding="utf-8")) == old


def test_json_errors_carry_the_load_reason(project: Path) -> None:
    done = cli("run", "nope", "--json", cwd=project)
    assert done.returncode == 4
    error = json.loads(done.stderr)["error"]
    assert (error["code"], error["reason"]) == ("prompt_load", "not_found")
    broken = project / "prompts" / "broken.prompt.md"
    broken.write_text("---\nprofile: chatty\n---\nHi {% if %}\n", encoding="utf-8")
    syntax = cli("run", "broken", "--json", cwd=project)
    assert syntax.returncode == 4
    error = json.loads(syntax.stderr)["error"]
    assert (error["code"], error["reason"]) == ("prompt_load", "invalid")
