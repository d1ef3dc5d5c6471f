"""What a user's first hour with the CLI met: options before the command, "did you mean" for a
mistyped command, ``test`` prompt or tests-file key, ``check`` reporting every mistake of a tests
file, and a ``test`` report that says each failing expectation once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scriptorium.cli import main
from scriptorium.cli.output import plural
from tests.evals.project import BAD, make_project, write_tests

TWO_CASES = """
repeat: 10
cases:
  - name: right person
    artifacts: {document: ../docs/ada.txt}
    expect: {pointer: {/name: Ada Lovelace}}
  - name: has an email
    artifacts: {document: ../docs/ada.txt}
    expect: {pointer: {/email: ada@example.com}}
"""


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(tmp_path / "project")
    monkeypatch.chdir(tmp_path)  # not the project: --root must find it
    return project


def test_root_before_the_command_works(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(root), "list"]) == 0
    assert "contact" in capsys.readouterr().out


def test_json_before_the_command_works(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--json", "--root", str(root), "list"]) == 0
    assert "prompts" in json.loads(capsys.readouterr().out)


def test_the_commands_own_root_wins(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", "/nonexistent", "list", "--root", str(root)]) == 0
    assert "contact" in capsys.readouterr().out


def test_a_mistyped_command_gets_a_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lst"]) == 2
    assert "did you mean 'list'?" in capsys.readouterr().err


def test_a_mistyped_test_prompt_gets_a_did_you_mean(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tests(root, "contact", TWO_CASES)
    assert main(["test", "--root", str(root), "contcat"]) == 4
    assert "did you mean 'contact'?" in capsys.readouterr().err


def test_check_reports_every_mistake_of_a_tests_file_with_suggestions(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tests(
        root,
        "contact",
        """
        cases:
          - name: one
            expct: {valid: true}
          - name: two
            inptus: {}
          - name: three
            expect: {vaild: true}
        """,
    )
    assert main(["check", "--root", str(root)]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if "tests_invalid" in line]
    assert len(lines) == 3, lines
    assert any("did you mean 'expect'?" in line for line in lines)
    assert any("did you mean 'inputs'?" in line for line in lines)
    assert any("did you mean 'valid'?" in line for line in lines)


def test_a_failing_expectation_is_said_once_per_case_with_its_count(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two cases, ten repeats, both failing every time: two detail lines, not twenty."""
    write_tests(root, "contact", TWO_CASES)
    assert main(["test", "--root", str(root), "-p", "bad"]) == 1
    out = capsys.readouterr().out
    assert out.count("pointer /name:") == 1
    assert out.count("pointer /email:") == 1
    assert "(10 of 10 repeats)" in out
    assert "repeat 1:" not in out


def test_an_invalid_output_shows_the_pointer_of_each_issue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = {**BAD, "name": 42}
    root = make_project(
        tmp_path / "p",
        broken=f"provider: fake\nmodel: m\noptions:\n  responses:\n    - {json.dumps(json.dumps(broken))}\n",
    )
    write_tests(
        root,
        "contact",
        """
        cases:
          - name: valid
            artifacts: {document: ../docs/ada.txt}
            expect: {valid: true}
        """,
    )
    assert main(["test", "--root", str(root), "-p", "broken"]) == 1
    out = capsys.readouterr().out
    assert "valid: the output is not valid: /name: " in out


def test_a_baseline_of_another_profile_says_nothing_was_compared(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tests(root, "contact", TWO_CASES)
    assert main(["test", "--root", str(root), "--json", "--repeat", "1"]) == 0
    baseline = tmp_path / "baseline.json"
    baseline.write_text(capsys.readouterr().out, "utf-8")
    code = main(["test", "--root", str(root), "-p", "flaky", "--baseline", str(baseline)])
    assert code == 1
    out = capsys.readouterr().out
    assert "0 cases compared" in out
    assert "not in the baseline: contact [flaky]" in out
    assert "the baseline holds contact [good]" in out


def test_prepare_shows_the_key_variable_read_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path / "p", gpt="provider: openai\nmodel: gpt-4.1-mini\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-prepare-shows-it-0001")
    argv = ["prepare", "note", "--root", str(root), "-p", "gpt", "-i", "topic=x"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "$OPENAI_API_KEY (default" in out
    assert "sk-prepare-shows-it-0001" not in out
    assert main([*argv, "--json"]) == 0
    target = json.loads(capsys.readouterr().out)["target"]
    assert (target["api_key_env"], target["api_key_source"]) == ("OPENAI_API_KEY", "default")


def test_check_suggests_the_profile_a_tests_file_meant(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tests(
        root,
        "contact",
        """
        profile: godo
        cases:
          - name: judged
            artifacts: {document: ../docs/ada.txt}
            expect: {judge: {profile: judge-yse, rubric: names Ada}}
        """,
    )
    assert main(["check", "--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert "did you mean 'good'?" in out
    assert "did you mean 'judge-yes'?" in out


@pytest.mark.parametrize(
    ("count", "noun", "many", "said"),
    [
        (1, "case", None, "1 case"),
        (2, "case", None, "2 cases"),
        (0, "run", None, "0 runs"),
        (1, "batch", "batches", "1 batch"),
        (3, "batch", "batches", "3 batches"),
    ],
)
def test_plurals_are_english(count: int, noun: str, many: str | None, said: str) -> None:
    assert plural(count, noun, many) == said
