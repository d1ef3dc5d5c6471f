"""``scriptorium test --against REF`` and ``--html FILE`` in process: the exit code is the
comparison's, and the text, JSON, JUnit and HTML reports carry it."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml

from scriptorium.cli import main
from scriptorium.cli.test import ProgressLine
from scriptorium.evals import TestReport
from scriptorium.evals.suite import Progress
from tests.evals.project import BAD, GOOD, fake, make_project, write_tests
from tests.evals.test_compare import CONTACT_TESTS, git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(tmp_path / "repo", answer=fake(json.dumps(GOOD)))
    write_tests(project, "contact", CONTACT_TESTS.format(repeat=1, must_pass="true"))
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "v1")
    monkeypatch.chdir(project)
    return project


def _answer(root: Path, answer: object) -> None:
    (root / "profiles" / "answer.yaml").write_text(fake(json.dumps(answer)), "utf-8")


def test_a_must_pass_regression_exits_1_and_every_output_says_so(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _answer(root, BAD)
    code = main(
        ["test", "--against", "HEAD", "--junit", "out/ci/j.xml", "--html", "out/web/r.html"]
    )
    assert code == 1
    out, err = capsys.readouterr()
    assert "against HEAD (" in out
    assert "REGRESSED (must_pass) contact [answer] finds ada: 1/1 -> 0/1" in out
    assert '~ /name: "Ada Lovelace" -> "Charles"' in out
    assert "paired exact test (McNemar, two-sided): 0 runs fixed, 1 regressed, p = 1" in out
    assert "test_failed" in err
    assert "must_pass regressed: contact [answer] finds ada" in err
    suites = {suite.name: suite for suite in JUnitXml.fromfile("out/ci/j.xml")}
    against = suites["against HEAD"]
    failures = [
        (case.name, result.type)
        for case in against
        for result in case.result
        if isinstance(result, Failure)
    ]
    assert failures == [("finds ada", "regressed")]
    html = Path("out/web/r.html").read_text("utf-8")
    assert 'data-version="before"' in html
    assert "regressed" in html


def test_the_json_report_carries_the_comparison(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _answer(root, BAD)
    assert main(["test", "--json", "--against", "HEAD"]) == 1
    out, _ = capsys.readouterr()
    data = json.loads(out)
    comparison = data["comparison"]
    assert comparison["cases"][0]["change"] == "regressed"
    assert comparison["p_value"] == 1.0
    assert comparison["ok"] is False
    assert data["ok"] is False
    assert comparison["before"]["cases_passed"] == 1
    report = TestReport.model_validate_json(out)  # it reads back (as --baseline does)
    assert report.comparison is not None
    assert report.comparison.regressed == 1


def test_with_against_the_exit_code_is_the_comparisons(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tests(root, "contact", CONTACT_TESTS.format(repeat=1, must_pass="false"))
    _answer(root, BAD)
    # The case fails now, but one regressed run is not evidence of a worse prompt.
    assert main(["test", "--against", "HEAD"]) == 0
    assert main(["test"]) == 1  # a plain run keeps the pass-rate rule
    capsys.readouterr()
    assert main(["test", "--against", "HEAD", "--repeat", "6"]) == 1
    _, err = capsys.readouterr()
    assert "worse than HEAD: 6 runs regressed, 0 fixed (p = 0.0312)" in err


def test_a_reference_that_is_not_one_is_a_usage_error(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["test", "--against", "nope"]) == 2
    _, err = capsys.readouterr()
    assert "--against nope" in err


def test_html_without_against_is_written_with_its_folders(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["test", "--html", "a/b/report.html"]) == 0
    html = Path("a/b/report.html").read_text("utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert 'data-outcome="passed"' in html
    assert "data-version" not in html
    assert [p.name for p in Path("a/b").iterdir()] == ["report.html"]  # no temporary left


def test_the_progress_line_starts_its_pace_over_for_the_second_run() -> None:
    times = iter([0.0, 100.0, 101.0])
    stream = io.StringIO()
    line = ProgressLine(stream, clock=lambda: next(times))
    line.show(Progress("cases", 10, 10, 10, 0, 0, 100.0))  # the candidate: done at t=100
    line.show(Progress("cases", 1, 10, 1, 0, 0, 101.0))  # the reference: 1 of 10 in 1 s
    assert stream.getvalue().endswith("ETA 9s ")
