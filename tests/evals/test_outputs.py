"""What a test run writes: the JSON report read back as a baseline (a real regression flagged, a
drop within noise not), and JUnit XML read by a JUnit reader (junitparser) with every attribute
the JUnit schema requires."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml

from scriptorium import Engine
from scriptorium.errors import InvalidRequestError
from scriptorium.evals import TestReport
from scriptorium.evals.junit import junit_xml, write_junit
from tests.evals.project import BAD, GOOD, fake, make_project, write_tests

CASE = """
repeat: 10
cases:
  - name: the name
    artifacts: {document: ../docs/ada.txt}
    expect: {pointer: {/name: Ada Lovelace}}
    min_pass_rate: 0.0
"""


def _answers(root: Path, good: int, bad: int) -> None:
    """The profile ``mixed`` answers ``good`` right, then ``bad`` wrong (one engine's turns)."""
    answers = [json.dumps(GOOD)] * good + [json.dumps(BAD)] * bad
    (root / "profiles" / "mixed.yaml").write_text(fake(*answers), "utf-8")


def _run(root: Path, good: int, bad: int, baseline: TestReport | Path | None = None) -> TestReport:
    _answers(root, good, bad)
    return Engine(root).test(profiles=["mixed"], concurrency=1, baseline=baseline)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = make_project(tmp_path / "project")
    write_tests(project, "contact", CASE)
    return project


def test_a_real_regression_is_flagged(root: Path, tmp_path: Path) -> None:
    before = _run(root, 10, 0)
    saved = tmp_path / "old.json"
    saved.write_text(before.model_dump_json(), "utf-8")
    after = _run(root, 3, 7, baseline=saved)
    (case,) = after.all_cases()
    assert case.status == "passed"  # min_pass_rate 0: only the baseline can fail it
    assert case.regression
    assert after.baseline is not None
    assert after.baseline.regressions == 1
    assert after.baseline.source == str(saved)
    (compared,) = after.baseline.compared
    assert (compared.old_pass_rate, compared.new_pass_rate) == (1.0, 0.3)
    assert compared.new_interval is not None
    assert compared.new_interval.high < 1.0
    assert not after.ok


def test_a_drop_within_noise_is_not_flagged(root: Path) -> None:
    before = _run(root, 8, 2)
    after = _run(root, 7, 3, baseline=before)
    (case,) = after.all_cases()
    assert (case.passed, case.scored) == (7, 10)
    assert case.interval is not None
    assert case.interval.high > 0.8  # the old rate is inside the new interval
    assert not case.regression
    assert after.baseline is not None
    assert after.baseline.regressions == 0
    assert after.ok


def test_cases_in_one_report_only_are_listed_not_flagged(root: Path) -> None:
    before = _run(root, 10, 0)
    write_tests(root, "contact", CASE.replace("the name", "renamed"))
    after = _run(root, 10, 0, baseline=before)
    assert after.baseline is not None
    assert after.baseline.new_cases == ("contact [mixed] renamed",)
    assert after.baseline.missing_cases == ("contact [mixed] the name",)
    assert after.ok


def test_a_baseline_that_is_not_a_report_is_refused(root: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"groups": 3}', "utf-8")
    with pytest.raises(InvalidRequestError, match="not a test report"):
        Engine(root).test(baseline=bad)
    with pytest.raises(InvalidRequestError, match="not found"):
        Engine(root).test(baseline=tmp_path / "missing.json")


def test_the_json_report_reads_back_as_the_same_report(root: Path) -> None:
    report = _run(root, 6, 4)
    assert TestReport.model_validate_json(report.model_dump_json()) == report


def _mixed_project(tmp_path: Path) -> Path:
    project = make_project(tmp_path / "mixed")
    write_tests(
        project,
        "contact",
        """
        repeat: 2
        cases:
          - name: passes
            artifacts: {document: ../docs/ada.txt}
            expect: {valid: true}
          - name: fails <&> "quoted"
            artifacts: {document: ../docs/ada.txt}
            expect: {pointer: {/name: Grace Hopper}}
          - name: unscored
            artifacts: {document: ../docs/ada.txt}
            expect: {judge: {profile: judge-mute, rubric: Fine.}}
        """,
    )
    return project


def test_junit_is_read_by_a_junit_reader(tmp_path: Path) -> None:
    report = Engine(_mixed_project(tmp_path)).test(profiles=["good"])
    path = tmp_path / "out" / "junit.xml"
    path.parent.mkdir()
    write_junit(report, path)
    xml = JUnitXml.fromfile(str(path))
    suites = list(xml)
    assert [s.name for s in suites] == ["contact [good]"]
    (suite,) = suites
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (3, 1, 1, 0)
    cases = {case.name: case for case in suite}
    assert set(cases) == {"passes", 'fails <&> "quoted"', "unscored"}
    assert cases["passes"].is_passed
    (failure,) = cases['fails <&> "quoted"'].result
    assert isinstance(failure, Failure)
    assert "0/2 scored repeats passed" in (failure.message or "")
    assert "pointer /name" in (failure.text or "")
    assert "Grace Hopper" in (failure.text or "")  # expected
    assert "Ada Lovelace" in (failure.text or "")  # seen
    (error,) = cases["unscored"].result
    assert isinstance(error, Error)
    assert "judge_no_verdict" in (error.text or "")
    assert all(case.classname == "contact[good]" for case in cases.values())


def test_junit_carries_every_attribute_the_schema_requires(tmp_path: Path) -> None:
    report = Engine(_mixed_project(tmp_path)).test(profiles=["good"])
    root = ET.fromstring(junit_xml(report))  # noqa: S314 - the document this test just wrote
    assert root.tag == "testsuites"
    for suite in root.iter("testsuite"):
        for name in ("name", "tests", "failures", "errors", "skipped", "time", "timestamp"):
            assert suite.get(name), name
        assert suite.get("hostname")
        for case in suite.iter("testcase"):
            for name in ("name", "classname", "time"):
                assert case.get(name) is not None, name
            float(case.get("time") or "x")


def test_a_regression_is_a_junit_failure(root: Path) -> None:
    before = _run(root, 10, 0)
    after = _run(root, 2, 8, baseline=before)
    (suite,) = list(JUnitXml.fromstring(junit_xml(after)))
    (case,) = list(suite)
    (failure,) = case.result
    assert isinstance(failure, Failure)
    assert failure.type == "regression"
