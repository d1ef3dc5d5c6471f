"""``scriptorium test`` in process: exit codes, the text and JSON reports, --junit, --baseline,
the usage errors and the terminal's progress line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from junitparser import JUnitXml

from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium.cli import main
from scriptorium.cli.test import ProgressLine
from scriptorium.evals import TestReport
from scriptorium.evals.suite import Progress
from tests.evals.project import GOOD, make_project, write_tests

PASSING = """
cases:
  - name: holds
    artifacts: {document: ../docs/ada.txt}
    expect: {pointer: {/name: Ada Lovelace}}
"""
FAILING = """
cases:
  - name: wrong person
    artifacts: {document: ../docs/ada.txt}
    expect: {pointer: {/name: Grace Hopper}}
"""


class Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(tmp_path / "project")
    monkeypatch.chdir(project)
    return project


def test_all_passing_exits_0_with_a_report(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_tests(root, "contact", PASSING)
    assert main(["test"]) == 0
    out, err = capsys.readouterr()
    assert "contact on good: 1/1 cases passed" in out
    assert "pass rate 100% (95% CI 21%-100%)" in out
    assert "ok    holds  1/1" in out
    assert out.rstrip().splitlines()[-1].startswith("total: 1 case, 1 passed, 0 failed")
    assert err == ""


def test_a_failing_case_exits_1_showing_what_failed(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tests(root, "contact", FAILING)
    assert main(["test", "contact"]) == 1
    out, err = capsys.readouterr()
    assert "FAIL  wrong person  0/1 (needs 100%)" in out
    assert "pointer /name: the value at /name is not the expected one (the only repeat)" in out
    assert "expected: Grace Hopper" in out
    assert "seen:     Ada Lovelace" in out
    assert err.strip() == "scriptorium: test_failed: 1 of 1 cases did not meet their pass rate"


def test_json_prints_the_whole_report(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_tests(root, "contact", FAILING)
    assert main(["test", "--json", "-p", "good", "-p", "bad", "--repeat", "2"]) == 1
    out, err = capsys.readouterr()
    report = TestReport.model_validate_json(out)
    assert [(g.profile, g.repeats) for g in report.groups] == [("good", 2), ("bad", 2)]
    assert json.loads(err)["error"]["code"] == "test_failed"


def test_junit_and_baseline_are_written_and_read(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tests(root, "contact", PASSING)
    assert main(["test", "--json", "--repeat", "5"]) == 0
    baseline = tmp_path / "baseline.json"
    baseline.write_text(capsys.readouterr().out, "utf-8")
    junit = tmp_path / "junit.xml"
    assert main(["test", "-p", "bad", "--baseline", str(baseline), "--junit", str(junit)]) == 1
    out, _ = capsys.readouterr()
    assert "baseline" in out
    (suite,) = list(JUnitXml.fromfile(str(junit)))
    assert suite.name == "contact [bad]"
    # Another profile is another case: nothing to compare, so the baseline says it is new.
    assert "1 new" in out


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["test", "--record", "--replay"], "not allowed with argument"),
        (["test", "--repeat", "0"], "--repeat must be at least 1"),
        (["test", "--concurrency", "0"], "--concurrency must be at least 1"),
        (["test", "--poll-s", "0"], "--poll-s must be positive"),
        (["test", "--repeat", "x"], "invalid int value"),
    ],
)
def test_usage_errors_exit_2(
    root: Path, capsys: pytest.CaptureFixture[str], args: list[str], why: str
) -> None:
    write_tests(root, "contact", PASSING)
    assert main(args) == 2
    assert why in capsys.readouterr().err


def test_no_tests_and_no_project_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    make_project(tmp_path / "empty")
    assert main(["test", "--root", str(tmp_path / "empty")]) == 2
    assert "no tests files" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)
    assert main(["test"]) == 2
    assert "no prompts/ directory" in capsys.readouterr().err


def test_replay_refuses_a_live_profile_with_exit_2(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (root / "profiles" / "live.yaml").write_text(
        "provider: anthropic\nmodel: claude-haiku-4-5\napi_key_env: NOPE_KEY\n", "utf-8"
    )
    write_tests(root, "contact", PASSING)
    assert main(["test", "-p", "live", "--replay"]) == 2
    assert "--replay: profile 'live'" in capsys.readouterr().err


def test_the_progress_line_is_shown_on_a_terminal(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tests(root, "contact", PASSING)
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(["test", "--repeat", "3"]) == 0
    shown = terminal.getvalue()
    assert "\rtest: 3/3 runs, 3 passing, 0 failing, $0.000000 so far" in shown
    assert shown.endswith("\n")
    capsys.readouterr()


def test_the_progress_line_estimates_the_time_left() -> None:
    stream = io.StringIO()
    now = [100.0]
    line = ProgressLine(stream, clock=lambda: now[0])
    now[0] = 110.0
    line.show(Progress("cases", 10, 40, 9, 1, 1234, 10.0))
    assert "10/40 runs, 9 passing, 1 failing, $0.001234 so far, ETA 30s" in stream.getvalue()
    line.show(Progress("judges", 0, 5, 9, 1, 1234, 10.0))
    assert "0/5 judged" in stream.getvalue()
    line.end()
    assert stream.getvalue().endswith("\n")


def test_provider_batch_sends_the_cases_through_the_batch_api(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeAnthropicServer(default_text=json.dumps(GOOD)) as server:
        (root / "profiles" / "live.yaml").write_text(
            f"provider: anthropic\nmodel: claude-haiku-4-5\nendpoint: {server.url}\n"
            "api_key_env: EVALS_CLI_KEY\n",
            "utf-8",
        )
        monkeypatch.setenv("EVALS_CLI_KEY", "sk-evals-cli-test-key")
        write_tests(root, "contact", PASSING)
        assert main(["test", "-p", "live", "--provider-batch", "--poll-s", "0.01"]) == 0
        out, _ = capsys.readouterr()
        assert "through provider batches" in out
        assert len(server.batches.created) == 1
