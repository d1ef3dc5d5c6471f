"""Evals run through the run flow, so a case on a profile with a fallback chain is answered by the
chain, as any run of that profile would be."""

from __future__ import annotations

from pathlib import Path

from scriptorium import Engine
from tests.evals.project import make_project, write_tests

FAILING = "provider: fake\nmodel: offline\noptions:\n  fail: [{reason: server_error}]\n"

CASES = """
profile: {profile}
cases:
  - name: the contact
    artifacts: {{document: ../docs/ada.txt}}
    expect: {{valid: true, value: {{name: Ada Lovelace, email: ada@example.com, tags: [math, engines]}}}}
"""


def test_a_case_on_a_failing_profile_is_answered_by_its_fallback(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", primary=FAILING + "fallback: [good]\n")
    write_tests(root, "contact", CASES.format(profile="primary"))
    report = Engine(root).test()
    [case] = list(report.all_cases())
    assert (case.profile, case.status, case.passed) == ("primary", "passed", 1)
    [outcome] = case.outcomes
    answered = Engine(root).prepare(
        "contact", profile="good", artifacts={"document": "docs/ada.txt"}
    )
    assert outcome.request_hash == answered.request_hash


def test_without_the_chain_the_same_case_fails_on_the_run(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", primary=FAILING)
    write_tests(root, "contact", CASES.format(profile="primary"))
    [case] = list(Engine(root).test().all_cases())
    assert case.status == "failed"
    [outcome] = case.outcomes
    assert outcome.error is not None
    assert outcome.error.code == "llm_generate"
