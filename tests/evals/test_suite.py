"""Engine.test over an offline project: every expectation kind passing and failing with the value
seen, profiles side by side, repeats, judges (their errors counted apart), and the report's
figures recomputed here from the repeat outcomes with formulas written out independently."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from scriptorium import Engine
from scriptorium.errors import InvalidRequestError, ProfileLoadError, PromptLoadError
from scriptorium.evals import CaseReport, GroupReport, TestReport
from scriptorium.evals.suite import Progress
from tests.evals.project import make_project, write_tests

EVERY_KIND = """
profile: good
cases:
  - name: everything holds
    artifacts: {document: ../docs/ada.txt}
    expect:
      valid: true
      value: {name: Ada Lovelace, tags: [math, engines]}
      pointer: {/email: ada@example.com, /tags/1: engines, "": {name: Ada Lovelace, email: ada@example.com, tags: [math, engines]}}
      contains: [Ada, Lovelace]
      not_contains: Charles
      regex: '"email"\\s*:\\s*"[^"]+@example\\.com"'
      max_cost_micro: 0
      max_latency_ms: 60000
      max_output_tokens: 100
      judge: {profile: judge-yes, rubric: The name is a full name.}
  - name: everything fails
    artifacts: {document: {text: "someone"}}
    expect:
      valid: false
      value: {name: Grace Hopper}
      pointer: {/email: grace@example.com, /phone: "1"}
      contains: Grace
      not_contains: Ada
      regex: 'Hopper'
      max_output_tokens: 1
"""


def _project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "project")
    write_tests(root, "contact", EVERY_KIND)
    return root


def _case(report: TestReport, name: str, profile: str | None = None) -> CaseReport:
    found = [
        c
        for c in report.all_cases()
        if c.case == name and (profile is None or c.profile == profile)
    ]
    assert len(found) == 1, [c.key for c in report.all_cases()]
    return found[0]


def test_every_expectation_kind_passes_on_a_matching_output(tmp_path: Path) -> None:
    report = Engine(_project(tmp_path)).test(cases=["everything holds"])
    case = _case(report, "everything holds")
    assert case.status == "passed", case.outcomes
    assert case.outcomes[0].judge is not None
    assert case.outcomes[0].judge.passed is True
    assert case.outcomes[0].judge.reason == "it meets the rubric"
    assert report.ok


def test_every_expectation_kind_fails_with_the_value_seen(tmp_path: Path) -> None:
    report = Engine(_project(tmp_path)).test(cases=["everything fails"])
    case = _case(report, "everything fails")
    assert case.status == "failed"
    failures = {f.expectation: f for f in case.outcomes[0].failures}
    assert set(failures) == {
        "valid",
        "value",
        "pointer /email",
        "pointer /phone",
        "contains",
        "not_contains",
        "regex",
        "max_output_tokens",
    }
    assert failures["valid"].seen is True
    assert failures["value"].seen["name"] == "Ada Lovelace"
    assert failures["value"].expected == {"name": "Grace Hopper"}
    assert failures["pointer /email"].seen == "ada@example.com"
    assert "nothing at /phone" in failures["pointer /phone"].message
    assert "Ada Lovelace" in failures["contains"].seen
    assert failures["max_output_tokens"].expected == 1
    assert failures["max_output_tokens"].seen > 1
    assert not report.ok


def test_a_run_that_fails_is_a_failed_repeat_naming_the_error(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    write_tests(
        root,
        "contact",
        """
        cases:
          - name: no such file
            artifacts: {document: ../docs/missing.txt}
          - name: a required artifact left out
        """,
    )
    report = Engine(root).test()
    missing = _case(report, "no such file")
    assert missing.status == "failed"
    assert missing.outcomes[0].error is not None
    assert missing.outcomes[0].error.code == "artifact_load"
    assert missing.outcomes[0].failures[0].expectation == "run"
    left_out = _case(report, "a required artifact left out")
    assert left_out.outcomes[0].error is not None
    assert left_out.outcomes[0].error.code == "invalid_request"


def test_value_expectations_on_a_text_prompt_fail_saying_there_is_no_parsed_value(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "project")
    write_tests(
        root,
        "note",
        """
        cases:
          - name: text
            inputs: {topic: deploys}
            expect: {contains: Tuesdays, value: {a: 1}}
        """,
    )
    case = _case(Engine(root).test(), "text")
    assert [f.expectation for f in case.outcomes[0].failures] == ["value"]
    assert "text" in case.outcomes[0].failures[0].message


def test_profiles_run_side_by_side_as_a_matrix(tmp_path: Path) -> None:
    report = Engine(_project(tmp_path)).test(
        ["contact"], ["good", "bad"], cases=["everything holds"]
    )
    assert [(g.prompt, g.profile) for g in report.groups] == [
        ("contact", "good"),
        ("contact", "bad"),
    ]
    assert _case(report, "everything holds", "good").status == "passed"
    assert _case(report, "everything holds", "bad").status == "failed"


def _wilson(k: int, n: int) -> tuple[float, float]:
    # Written out from the textbook formula, apart from scriptorium.evals.stats.
    z = 1.959963984540054
    centre = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)
    return centre - half, centre + half


def _nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered) / 100) - 1)]


def _check_case_figures(case: CaseReport) -> None:
    statuses = [o.status for o in case.outcomes]
    passed = statuses.count("passed")
    failed = statuses.count("failed")
    unscored = statuses.count("judge_error")
    assert (case.passed, case.failed, case.judge_errors) == (passed, failed, unscored)
    assert case.repeats == len(statuses)
    assert case.scored == passed + failed
    if passed + failed:
        assert case.pass_rate == pytest.approx(passed / (passed + failed))
        assert case.interval is not None
        low, high = _wilson(passed, passed + failed)
        assert case.interval.low == pytest.approx(max(0.0, low), abs=1e-9)
        assert case.interval.high == pytest.approx(min(1.0, high), abs=1e-9)
    else:
        assert case.pass_rate is None
        assert case.interval is None
    if failed:
        assert case.pass_hat_k is False
    elif unscored:
        assert case.pass_hat_k is None
    else:
        assert case.pass_hat_k is True
    assert case.pass_at_k is (True if passed else (None if unscored else False))
    assert case.cost_micro == sum(o.cost_micro for o in case.outcomes)
    judged = [o.judge.cost_micro for o in case.outcomes if o.judge is not None]
    assert case.judge_cost_micro == sum(judged)
    latencies = [o.latency_ms for o in case.outcomes if o.latency_ms is not None]
    if latencies:
        assert case.latency_p50_ms == _nearest_rank(latencies, 50)
        assert case.latency_p95_ms == _nearest_rank(latencies, 95)


def _check_group_figures(group: GroupReport) -> None:
    outcomes = [o for c in group.cases for o in c.outcomes]
    passed = sum(o.status == "passed" for o in outcomes)
    scored = sum(o.status != "judge_error" for o in outcomes)
    assert (group.passed, group.scored, group.repeats) == (passed, scored, len(outcomes))
    assert group.pass_rate == pytest.approx(passed / scored)
    every = [all(o.status == "passed" for o in c.outcomes) for c in group.cases]
    some = [any(o.status == "passed" for o in c.outcomes) for c in group.cases]
    assert group.pass_hat_k == pytest.approx(sum(every) / len(every))
    assert group.pass_at_k == pytest.approx(sum(some) / len(some))
    assert group.cost_micro == sum(o.cost_micro for o in outcomes)
    latencies = [o.latency_ms for o in outcomes if o.latency_ms is not None]
    assert group.latency_p95_ms == _nearest_rank(latencies, 95)


def test_the_figures_over_repeats_are_what_the_outcomes_say(tmp_path: Path) -> None:
    """A flaky profile alternates a good and a bad answer: over 6 repeats 3 pass."""
    root = make_project(tmp_path / "project")
    write_tests(
        root,
        "contact",
        """
        repeat: 6
        cases:
          - name: flaky
            artifacts: {document: ../docs/ada.txt}
            expect: {pointer: {/name: Ada Lovelace}}
            min_pass_rate: 0.5
          - name: steady
            artifacts: {document: {text: x}}
            expect: {valid: true}
        """,
    )
    report = Engine(root).test(profiles=["flaky"], concurrency=3)
    (group,) = report.groups
    flaky, steady = group.cases
    # Both cases share the profile's turns, so which case got which answer varies; the steady
    # case passes on either answer.
    assert (steady.passed, steady.failed) == (6, 0)
    assert flaky.passed + flaky.failed == 6
    for case in group.cases:
        _check_case_figures(case)
    _check_group_figures(group)
    assert report.repeats == 12
    assert report.cases == 2


def test_min_pass_rate_decides_a_flaky_case(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    write_tests(
        root,
        "contact",
        """
        repeat: 4
        cases:
          - name: half is enough
            artifacts: {document: ../docs/ada.txt}
            expect: {pointer: {/name: Ada Lovelace}}
            min_pass_rate: 0.5
        """,
    )
    half = _case(Engine(root).test(profiles=["flaky"]), "half is enough")
    assert (half.passed, half.scored, half.status) == (2, 4, "passed")
    assert half.pass_hat_k is False
    assert half.pass_at_k is True
    again = _case(Engine(root).test(profiles=["flaky"], repeat=2), "half is enough")
    assert (again.repeats, again.passed) == (2, 1)


def test_a_judge_that_gives_no_verdict_is_counted_apart_and_left_out_of_the_rate(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "project")
    write_tests(
        root,
        "contact",
        """
        repeat: 3
        cases:
          - name: mute judge
            artifacts: {document: ../docs/ada.txt}
            expect: {judge: {profile: judge-mute, rubric: It is right.}}
          - name: judge says no
            artifacts: {document: ../docs/ada.txt}
            expect: {judge: {profile: judge-no, rubric: It is right.}}
          - name: failed before the judge
            artifacts: {document: ../docs/ada.txt}
            expect: {contains: nobody, judge: {profile: judge-mute, rubric: It is right.}}
        """,
    )
    report = Engine(root).test()
    mute = _case(report, "mute judge")
    assert (mute.judge_errors, mute.scored, mute.passed, mute.failed) == (3, 0, 0, 0)
    assert mute.pass_rate is None
    assert mute.interval is None
    assert mute.status == "error"
    assert mute.pass_hat_k is None
    assert mute.pass_at_k is None
    assert all(o.judge is not None and o.judge.error is not None for o in mute.outcomes)
    no = _case(report, "judge says no")
    assert (no.failed, no.judge_errors, no.status) == (3, 0, "failed")
    assert no.outcomes[0].failures[-1].expectation == "judge"
    assert no.outcomes[0].failures[-1].seen == "it names the wrong person"
    before = _case(report, "failed before the judge")
    assert before.status == "failed"
    assert all(o.judge is None for o in before.outcomes)  # a judge cannot save it: not asked
    assert report.judge_errors == 3
    assert (report.cases_errored, report.cases_failed) == (1, 2)
    _check_group_figures_with_unscored(report.groups[0])


def _check_group_figures_with_unscored(group: GroupReport) -> None:
    outcomes = [o for c in group.cases for o in c.outcomes]
    scored = [o for o in outcomes if o.status != "judge_error"]
    assert group.scored == len(scored) == 6
    assert group.judge_errors == 3
    assert group.pass_rate == 0.0  # 0 of the 6 scored, the 3 unscored not counted as failures
    assert (group.pass_hat_k_of, group.pass_at_k_of) == (2, 2)


def test_a_judge_run_is_an_ordinary_run_of_the_bundled_judge_prompt(tmp_path: Path) -> None:
    root = _project(tmp_path)
    report = Engine(root).test(cases=["everything holds"])
    judge = _case(report, "everything holds").outcomes[0].judge
    assert judge is not None
    assert judge.request_hash is not None
    assert judge.request_hash.startswith("sha256:")
    assert judge.profile == "judge-yes"


def test_the_suite_refuses_what_it_cannot_run_before_spending(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    with pytest.raises(InvalidRequestError, match="no tests files"):
        Engine(root).test()
    write_tests(
        root, "contact", "cases: [{name: a, expect: {judge: {profile: nosuch, rubric: r}}}]"
    )
    with pytest.raises(ProfileLoadError):
        Engine(root).test()
    with pytest.raises(PromptLoadError, match="tests of prompt 'note'"):
        Engine(root).test(["note"])
    with pytest.raises(InvalidRequestError, match="repeat"):
        Engine(root).test(repeat=0)
    with pytest.raises(InvalidRequestError, match="concurrency"):
        Engine(root).test(concurrency=0)


def test_progress_is_reported_as_runs_finish(tmp_path: Path) -> None:
    seen: list[Progress] = []
    Engine(_project(tmp_path)).test(on_progress=seen.append, repeat=2)
    cases = [p for p in seen if p.phase == "cases"]
    judges = [p for p in seen if p.phase == "judges"]
    assert cases[-1].done == cases[-1].total == 4
    assert (cases[-1].passing, cases[-1].failing) == (2, 2)
    assert judges[-1].done == judges[-1].total == 2
    assert judges[-1].passing == 2
