"""``--junit FILE``: a test report as JUnit XML, the format CI systems read.

One ``testsuite`` per prompt and profile, one ``testcase`` per case on it (its repeats summed up).
:func:`junit_outcome` is the one rule of how a case reads in CI, shared with the pytest plugin so
both give the same counts: a case where an expectation failed, or that regressed against the
baseline, is a ``failure`` naming each expectation that failed with the value seen; a case that
could not be judged (its run failed before there was an output, its judge errored or gave no
verdict) is an ``error`` (not scored, which is not the same as failing). Every attribute the
JUnit schema requires is written (``testsuite``: name, tests, failures, errors, skipped, time,
timestamp, hostname; ``testcase``: name, classname, time).

The document is well-formed whatever the outputs hold: every character XML 1.0 forbids (control
characters, lone surrogates, U+FFFE/U+FFFF) is written as ``#xNN`` text, in attributes and text
alike (as pytest's own ``--junitxml`` does). The file is replaced whole through a side file
(:mod:`scriptorium._sidefiles`), its missing parent directories created.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from datetime import UTC
from typing import Any, Literal

from scriptorium._sidefiles import write_replacing
from scriptorium.evals.report import CaseReport, GroupReport, TestReport, VersionComparison

__all__ = ["junit_outcome", "junit_xml", "write_junit", "xml_safe"]

#: The expectation name of a repeat whose run failed before there was an output.
_RUN = "run"
# Everything XML 1.0 does not allow in a document (tab, newline and carriage return are allowed).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    """``text`` with every character XML 1.0 forbids written as ``#xNN``."""
    return _NOT_XML.sub(lambda m: f"#x{ord(m.group()):02X}", text)


def junit_outcome(case: CaseReport) -> Literal["failure", "error"] | None:
    """How ``case`` reads in a JUnit report: ``failure`` when an expectation failed (or it
    regressed against the baseline), ``error`` when it could not be judged (a run that failed
    before there was an output, a judge error or no verdict), None when it passed."""
    if case.regression:
        return "failure"
    if case.status == "passed":
        return None
    expectation_failed = any(
        failure.expectation != _RUN for outcome in case.outcomes for failure in outcome.failures
    )
    return "failure" if expectation_failed else "error"


_MAX_DETAIL_CHARS = 500


def _seconds(milliseconds: float | None) -> str:
    return f"{(milliseconds or 0.0) / 1000.0:.3f}"


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _MAX_DETAIL_CHARS else text[:_MAX_DETAIL_CHARS] + "..."


def _percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.0%}"


def _details(case: CaseReport, *, judge_errors: bool) -> str:
    lines = []
    for outcome in case.outcomes:
        if judge_errors and outcome.judge is not None and outcome.judge.error is not None:
            error = outcome.judge.error
            lines.append(f"repeat {outcome.repeat}: judge: {error.code}: {error.message}")
        for failure in outcome.failures:
            if judge_errors and failure.expectation != _RUN:
                continue
            line = f"repeat {outcome.repeat}: {failure.expectation}: {failure.message}"
            if failure.expected is not None:
                line += f"; expected {_shown(failure.expected)}"
            if failure.seen is not None:
                line += f"; seen {_shown(failure.seen)}"
            lines.append(line)
    return "\n".join(lines)


def _summary(case: CaseReport) -> str:
    line = (
        f"{case.passed}/{case.scored} scored repeats passed ({_percent(case.pass_rate)}), "
        f"needs {case.min_pass_rate:.0%}"
    )
    if case.interval is not None:
        line += f"; 95% interval {case.interval.low:.0%}-{case.interval.high:.0%}"
    if case.judge_errors:
        line += f"; {case.judge_errors} judge error(s), not scored"
    return line


def _testcase(parent: ET.Element, case: CaseReport) -> None:
    elapsed = sum(o.latency_ms or 0.0 for o in case.outcomes)
    element = ET.SubElement(
        parent,
        "testcase",
        {
            "name": case.case,
            "classname": f"{case.prompt}[{case.profile}]",
            "time": _seconds(elapsed),
        },
    )
    kind = junit_outcome(case)
    if kind == "failure":
        why = "regression against the baseline; " if case.regression else ""
        failure = ET.SubElement(
            element,
            "failure",
            {
                "message": why + _summary(case),
                "type": "regression" if case.status != "failed" else "pass_rate",
            },
        )
        failure.text = _details(case, judge_errors=False)
    elif kind == "error":
        error = ET.SubElement(
            element,
            "error",
            {"message": _summary(case), "type": "judge_error" if case.judge_errors else "run"},
        )
        error.text = _details(case, judge_errors=True)
    out = ET.SubElement(element, "system-out")
    out.text = (
        f"{_summary(case)}; pass^k {case.pass_hat_k}, pass@k {case.pass_at_k}; "
        f"cost {case.cost_micro} micro-USD (judges {case.judge_cost_micro}; gateway reported "
        f"{case.gateway_cost_micro})"
    )


def _failed(case: CaseReport) -> bool:
    return junit_outcome(case) == "failure"


def _errored(case: CaseReport) -> bool:
    return junit_outcome(case) == "error"


def _testsuite(parent: ET.Element, group: GroupReport, timestamp: str) -> None:
    elapsed = sum(o.latency_ms or 0.0 for c in group.cases for o in c.outcomes)
    suite = _suite_element(
        parent,
        name=f"{group.prompt} [{group.profile}]",
        tests=len(group.cases),
        failures=sum(_failed(c) for c in group.cases),
        errors=sum(_errored(c) for c in group.cases),
        time=_seconds(elapsed),
        timestamp=timestamp,
        figures={
            "pass_rate": group.pass_rate,
            "pass_hat_k": group.pass_hat_k,
            "pass_at_k": group.pass_at_k,
            "cost_micro": group.cost_micro,
            "judge_cost_micro": group.judge_cost_micro,
            "gateway_cost_micro": group.gateway_cost_micro,
            "latency_p50_ms": group.latency_p50_ms,
            "latency_p95_ms": group.latency_p95_ms,
        },
    )
    for case in group.cases:
        _testcase(suite, case)


def _suite_element(
    parent: ET.Element,
    *,
    name: str,
    tests: int,
    failures: int,
    errors: int,
    time: str,
    timestamp: str,
    figures: Mapping[str, object],
) -> ET.Element:
    """A ``testsuite`` element under ``parent`` with the attributes the Jenkins schema asks
    for, and ``figures`` as its properties."""
    suite = ET.SubElement(
        parent,
        "testsuite",
        {
            "name": name,
            "tests": str(tests),
            "failures": str(failures),
            "errors": str(errors),
            "skipped": "0",
            "time": time,
            "timestamp": timestamp,
            "hostname": "localhost",
        },
    )
    properties = ET.SubElement(suite, "properties")
    for figure, value in figures.items():
        ET.SubElement(properties, "property", {"name": figure, "value": str(value)})
    return suite


def junit_xml(report: TestReport) -> bytes:
    """The report as a JUnit XML document (UTF-8, with its declaration)."""
    # The schema's timestamp is ISO 8601 without a zone (UTC here); the epoch when unknown.
    started = report.started_at
    timestamp = (
        "1970-01-01T00:00:00"
        if started is None
        else started.astimezone(UTC).replace(tzinfo=None, microsecond=0).isoformat()
    )
    cases = report.all_cases()
    root = ET.Element(
        "testsuites",
        {
            "name": "scriptorium test",
            "tests": str(len(cases)),
            "failures": str(sum(_failed(c) for c in cases)),
            "errors": str(sum(_errored(c) for c in cases)),
            "time": _seconds(report.duration_ms),
        },
    )
    for group in report.groups:
        _testsuite(root, group, timestamp)
    if report.comparison is not None:
        _comparison_suite(root, report.comparison, timestamp)
    _make_safe(root)
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return document


def _make_safe(root: ET.Element) -> None:
    """Every attribute and text of the tree made writable as XML 1.0 (:func:`xml_safe`): one
    pass over the finished tree, so no field can be missed."""
    for element in root.iter():
        for name, value in element.attrib.items():
            element.set(name, xml_safe(value))
        if element.text is not None:
            element.text = xml_safe(element.text)
        if element.tail is not None:
            element.tail = xml_safe(element.tail)


def _comparison_suite(root: ET.Element, comparison: VersionComparison, timestamp: str) -> None:
    """``--against``: one ``testsuite`` holding a ``testcase`` per case compared (a ``failure``
    when a ``must_pass`` case regressed) and one for the paired test (a ``failure`` when the
    candidate is worse), so the file fails exactly when the comparison does; the totals of
    ``testsuites`` count them too."""
    suite = _suite_element(
        root,
        name=f"against {comparison.against}",
        tests=len(comparison.cases) + 1,
        failures=len(comparison.must_pass_regressed) + int(comparison.worse),
        errors=0,
        time="0.000",
        timestamp=timestamp,
        figures={
            "revision": comparison.revision,
            "fixed": comparison.fixed,
            "regressed": comparison.regressed,
            "same": comparison.same,
            "passed_before": comparison.passed_before,
            "passed_after": comparison.passed_after,
            "cost_micro_before": comparison.cost_micro_before,
            "cost_micro_after": comparison.cost_micro_after,
            "latency_p50_ms_before": comparison.latency_p50_ms_before,
            "latency_p50_ms_after": comparison.latency_p50_ms_after,
            "fixed_pairs": comparison.fixed_pairs,
            "regressed_pairs": comparison.regressed_pairs,
            "p_value": comparison.p_value,
        },
    )
    for change in comparison.cases:
        element = ET.SubElement(
            suite,
            "testcase",
            {
                "name": change.case,
                "classname": f"against.{change.prompt}[{change.profile}]",
                "time": "0.000",
            },
        )
        summary = (
            f"{change.change}: {change.before_passed}/{change.before_scored} passed before, "
            f"{change.after_passed}/{change.after_scored} after"
        )
        if change.must_pass and change.change == "regressed":
            failure = ET.SubElement(
                element, "failure", {"message": "must_pass case " + summary, "type": "regressed"}
            )
            failure.text = "\n".join(change.diff.lines) if change.diff is not None else None
        out = ET.SubElement(element, "system-out")
        lines = [summary, *(change.diff.lines if change.diff is not None else ())]
        out.text = _shown("\n".join(lines))
    paired = ET.SubElement(
        suite,
        "testcase",
        {"name": "paired exact test", "classname": "against", "time": "0.000"},
    )
    said = (
        f"McNemar exact, two-sided: {comparison.fixed_pairs} runs fixed, "
        f"{comparison.regressed_pairs} regressed, p = {comparison.p_value:.4g}"
    )
    if comparison.worse:
        ET.SubElement(paired, "failure", {"message": "worse: " + said, "type": "worse"})
    ET.SubElement(paired, "system-out").text = said
    for name in ("tests", "failures"):
        root.set(name, str(int(root.get(name, "0")) + int(suite.get(name, "0"))))


def write_junit(report: TestReport, path: str | os.PathLike[str]) -> None:
    """Write :func:`junit_xml` to ``path``, replacing it whole (a reader never sees half) through
    a side file created exclusively beside it; missing parent directories are created."""
    write_replacing(path, junit_xml(report), make_parents=True)
