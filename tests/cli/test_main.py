"""The CLI in process: value syntaxes, the exit-code table, the error line, terminal-only output."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium import errors
from scriptorium.cli import main
from scriptorium.cli.commands import artifact_ref
from scriptorium.cli.output import EXIT_CODES, Reporter, exit_code
from scriptorium.cli.parser import parse_input

GREET = (
    "---\nprofile: offline\ninputs: {type: object, required: [name], properties: {name: {}}}\n"
    "---\nHello {{ name }}!\n"
)


class Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "greet.prompt.md").write_text(GREET, encoding="utf-8")
    (tmp_path / "profiles" / "offline.yaml").write_text(
        "provider: fake\nmodel: fake-1\noptions: {responses: [Hello!]}\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("n=3", ("n", 3)),
        ("flag=true", ("flag", True)),
        ('tags=["a", "b"]', ("tags", ["a", "b"])),
        ('n="3"', ("n", "3")),
        ("audience=board", ("audience", "board")),
        ("eq=a=b", ("eq", "a=b")),
        ("empty=", ("empty", "")),
    ],
)
def test_input_values_are_json_when_they_parse_else_text(
    text: str, expected: tuple[str, Any]
) -> None:
    assert parse_input(text) == expected


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="="), min_size=1), st.text())
def test_any_value_survives_as_json_or_as_itself(key: str, raw: str) -> None:
    """Whatever follows the first '=', it comes back as its JSON value or verbatim."""
    name, value = parse_input(f"{key}={raw}")
    assert name == key
    try:
        expected = json.loads(raw, parse_constant=reject)
    except ValueError:
        expected = raw
    assert value == expected


def reject(name: str) -> Any:
    raise ValueError(name)


def test_non_finite_numbers_stay_text() -> None:
    """NaN and Infinity have no JSON form, so they cannot be input values: they are text."""
    assert parse_input("x=NaN") == ("x", "NaN")
    assert parse_input("x=-Infinity") == ("x", "-Infinity")


def test_every_sentinel_has_its_documented_exit_code() -> None:
    expected = {
        "output_invalid": 1,
        "invalid_request": 2,
        "profile_required": 3,
        "api_key_env_missing": 3,
        "api_key_required": 3,
        "prompt_load": 4,
        "profile_load": 4,
        "artifact_load": 4,
        "prompt_render": 5,
        "llm_generate": 6,
        "validation": 7,
    }
    assert {cls.code: code for cls, code in EXIT_CODES.items()} == expected
    for cls in EXIT_CODES:
        assert exit_code(cls("boom")) == expected[cls.code]
    assert exit_code(errors.ScriptoriumError("other")) == 1


def test_the_error_line_stays_one_line_whatever_the_message() -> None:
    err = io.StringIO()
    Reporter(json_mode=False, out=io.StringIO(), err=err).error("x_code", "one\ntwo\r\n  three")
    assert err.getvalue() == "scriptorium: x_code: one two three\n"


def test_json_error_objects_carry_the_error_fields() -> None:
    err = io.StringIO()
    reporter = Reporter(json_mode=True, out=io.StringIO(), err=err)
    status = reporter.failure(errors.APIKeyEnvMissingError("set K", env_var="K", profile="p"))
    assert status == 3
    assert json.loads(err.getvalue()) == {
        "error": {"code": "api_key_env_missing", "message": "set K", "env_var": "K", "profile": "p"}
    }


def test_absolute_artifact_paths_inside_the_base_become_relative(tmp_path: Path) -> None:
    assert artifact_ref(str(tmp_path / "docs" / "a.txt"), tmp_path) == "docs/a.txt"
    assert artifact_ref("docs/a.txt", tmp_path) == "docs/a.txt"
    assert artifact_ref("/elsewhere/a.txt", tmp_path) == "/elsewhere/a.txt"


def test_help_and_version_return_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("scriptorium ")
    assert main(["run", "--help"]) == 0
    assert "--artifact" in capsys.readouterr().out


def test_no_command_prints_the_help_and_succeeds(capsys: pytest.CaptureFixture[str]) -> None:
    """`scriptorium` alone is a request for help (it was a usage error, exit 2, before the
    command line's turn-3 contract said otherwise)."""
    assert main([]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("usage: scriptorium")
    assert "run" in captured.out
    assert captured.err == ""


def test_an_unknown_command_is_still_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rnu"]) == 2
    assert capsys.readouterr().err.startswith("scriptorium: usage: ")


def test_run_summary_goes_to_stderr_only_on_a_terminal(
    root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["run", "greet", "-i", "name=Ada"]) == 0
    assert capsys.readouterr() == ("Hello!\n", "")
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(["run", "greet", "-i", "name=Ada"]) == 0
    assert "greet via offline: fake-1, valid" in terminal.getvalue()


def write_batch(root: Path, count: int) -> tuple[Path, Path]:
    source = root / "in.jsonl"
    lines = [json.dumps({"id": i, "inputs": {"name": f"n{i}"}}) for i in range(count)]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return source, root / "out.jsonl"


def test_batch_progress_is_written_when_stderr_is_a_terminal(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = write_batch(root, 3)
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(["batch", "greet", "--in", str(source), "--out", str(out)]) == 0
    progress = terminal.getvalue()
    assert "\rbatch: 3/3 done, 0 failed, 0 invalid" in progress
    assert progress.endswith("\n")
    assert "3 lines: 3 valid" in capsys.readouterr().out


def test_batch_options_give_every_line_defaults_that_lines_override(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = root / "in.jsonl"
    source.write_text('{"inputs": {}}\n{"inputs": {"name": "Own"}}\n', encoding="utf-8")
    out = root / "out.jsonl"
    assert main(["batch", "greet", "--in", "in.jsonl", "--out", "out.jsonl", "-i", "name=Opt"]) == 0
    contents = [
        json.loads(line)["result"]["prepared"]["messages"][0]["content"]
        for line in out.read_text(encoding="utf-8").splitlines()
    ]
    assert contents == ["Hello Opt!", "Hello Own!"]
    capsys.readouterr()


def test_batch_keeps_results_journaled_before_a_crash(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Results left in <out>.partial by an interrupted batch are reused, not run again."""
    source, out = write_batch(root, 2)
    assert main(["batch", "greet", "--in", str(source), "--out", str(out)]) == 0
    first = out.read_text(encoding="utf-8")
    # Simulate a crash of a later run: its journal holds the results, --out is gone.
    out.rename(root / "out.jsonl.partial")
    assert main(["batch", "greet", "--in", str(source), "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert summary["resumed"] == 2
    assert out.read_text(encoding="utf-8") == first
    assert not (root / "out.jsonl.partial").exists()


def test_batch_refuses_a_concurrency_below_one(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = write_batch(root, 1)
    assert (
        main(["batch", "greet", "--in", str(source), "--out", str(out), "--concurrency", "0"]) == 2
    )
    assert capsys.readouterr().err.startswith("scriptorium: invalid_request: ")


def test_batch_fails_early_when_the_prompt_cannot_load(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = write_batch(root, 1)
    assert main(["batch", "absent", "--in", str(source), "--out", str(out)]) == 4
    assert not out.exists()
    assert capsys.readouterr().err.startswith("scriptorium: prompt_load: ")


def test_an_unreadable_inputs_file_is_an_invalid_request(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "greet", "--inputs", "nowhere.json"]) == 2
    assert capsys.readouterr().err.startswith("scriptorium: invalid_request: --inputs: ")
    (root / "list.json").write_text("[1]", encoding="utf-8")
    assert main(["run", "greet", "--inputs", "list.json"]) == 2
    assert "must hold a JSON object" in capsys.readouterr().err


def test_an_out_of_range_override_is_an_invalid_request(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prepare", "greet", "-i", "name=A", "--temperature", "9"]) == 2
    assert capsys.readouterr().err.startswith("scriptorium: invalid_request: ")


def test_batch_output_in_a_missing_directory_is_an_invalid_request(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, _ = write_batch(root, 1)
    assert main(["batch", "greet", "--in", str(source), "--out", "no/such/dir/out.jsonl"]) == 2
    assert capsys.readouterr().err.startswith("scriptorium: invalid_request: --out: ")
