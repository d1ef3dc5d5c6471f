"""``check`` over tests files: each broken one found, named by file and case, and a clean one
quiet."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scriptorium import Engine
from scriptorium.check.problems import KINDS, WARNINGS
from tests.evals.project import make_project, write_tests

PASTED = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


def _problems(root: Path) -> list[tuple[str, str, str]]:
    return [(p.file, p.kind, p.message) for p in Engine(root).check()]


def _kinds(root: Path) -> list[str]:
    return [kind for _, kind, _ in _problems(root)]


def test_a_clean_tests_file_has_no_problems(root: Path) -> None:
    write_tests(
        root,
        "contact",
        """
        profile: good
        cases:
          - name: fine
            artifacts: {document: ../docs/ada.txt}
            expect:
              value: {name: Ada, tags: [x]}
              pointer: {/email: null, /tags/0: math, "": {name: Ada, email: null}}
              judge: {profile: judge-yes, rubric: Good.}
        """,
    )
    write_tests(root, "note", "cases: [{name: a, inputs: {topic: t}, expect: {contains: x}}]")
    assert _problems(root) == []


@pytest.mark.parametrize(
    ("text", "kind", "words"),
    [
        ("cases: [{name: a, bogus: 1}]", "tests_invalid", "cases[0].bogus: unknown key"),
        ("cases: [{name: a}]\nrepeat: -1", "tests_invalid", "repeat"),
        (
            "profile: nosuch\ncases: [{name: a, artifacts: {document: {text: x}}}]",
            "tests_profile",
            "'nosuch'",
        ),
        (
            "cases: [{name: a, artifacts: {document: {text: x}}, expect: {judge: {profile: nosuch, rubric: r}}}]",
            "tests_judge",
            "cases[0] ('a'): the judge names profile 'nosuch'",
        ),
        (
            "cases: [{name: a, inputs: {who: x}, artifacts: {document: {text: x}}}]",
            "tests_input",
            "declares no inputs",
        ),
        (
            "cases: [{name: a, artifacts: {document: {text: x}, scan: {text: y}}}]",
            "tests_artifact",
            "artifact 'scan' is not declared",
        ),
        ("cases: [{name: a}]", "tests_artifact", "requires artifact 'document'"),
        (
            "cases: [{name: a, artifacts: {document: ../docs/none.txt}}]",
            "tests_artifact",
            "docs/none.txt not found",
        ),
        (
            "cases: [{name: a, artifacts: {document: ../../../etc/passwd}}]",
            "tests_artifact",
            "outside the project",
        ),
        (
            "cases: [{name: a, artifacts: {document: {text: x}}, expect: {pointer: {/phone: x}}}]",
            "tests_pointer",
            "pointer /phone can never match the output: the schema allows no property 'phone'",
        ),
        (
            "cases: [{name: a, artifacts: {document: {text: x}}, expect: {pointer: {/name: 3}}}]",
            "tests_pointer",
            "the schema says string there, the case expects integer",
        ),
        (
            "cases: [{name: a, artifacts: {document: {text: x}}, expect: {value: {tags: [1]}}}]",
            "tests_pointer",
            "value at /tags/0",
        ),
        (
            "cases: [{name: a, artifacts: {document: {text: x}}, expect: {pointer: {/name/first: x}}}]",
            "tests_pointer",
            "the schema says string where /first needs an object or array",
        ),
    ],
)
def test_a_broken_contact_tests_file_is_reported(
    root: Path, text: str, kind: str, words: str
) -> None:
    write_tests(root, "contact", text)
    problems = _problems(root)
    assert [(file, found) for file, found, _ in problems] == [
        ("prompts/contact.tests.yaml", kind)
    ], problems
    assert words in problems[0][2]
    assert kind in KINDS
    assert kind not in WARNINGS  # a tests file that cannot pass is an error: check exits 1


def test_inputs_the_schema_refuses_are_reported(root: Path) -> None:
    write_tests(
        root, "note", "cases: [{name: a, inputs: {topic: 3}}, {name: b, inputs: {topics: x}}]"
    )
    problems = _problems(root)
    assert [k for _, k, _ in problems] == ["tests_input", "tests_input"]
    assert "cases[0] ('a')" in problems[0][2]
    assert "/topic: expected string" in problems[0][2]
    assert "did you mean 'topic'" in problems[1][2]


def test_value_expectations_on_a_text_prompt_are_reported(root: Path) -> None:
    write_tests(root, "note", "cases: [{name: a, inputs: {topic: t}, expect: {value: {a: 1}}}]")
    (problem,) = _problems(root)
    assert problem[1] == "tests_pointer"
    assert "text output" in problem[2]


def test_a_tests_file_without_its_prompt_is_an_orphan(root: Path) -> None:
    write_tests(root, "gone", "cases: [{name: a}]")
    write_tests(root, "Upper/Case", "cases: [{name: a}]")
    problems = _problems(root)
    assert [(f, k) for f, k, _ in problems] == [
        ("prompts/Upper/Case.tests.yaml", "tests_orphan"),
        ("prompts/gone.tests.yaml", "tests_orphan"),
    ]
    assert "there is no prompt 'gone'" in problems[1][2]


def test_a_pasted_key_in_a_tests_file_is_reported_by_line_without_the_value(root: Path) -> None:
    write_tests(root, "note", f"cases:\n  - name: a\n    inputs: {{topic: {PASTED}}}\n")
    found = Engine(root).check()
    secrets = [p for p in found if p.kind == "secret_in_tests"]
    assert [(p.file, p.line) for p in secrets] == [("prompts/note.tests.yaml", 3)]
    assert all(PASTED not in str(p) for p in found)


def test_a_linked_tests_file_leading_outside_is_reported(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.tests.yaml"
    outside.write_text("cases: [{name: a}]", "utf-8")
    os.symlink(outside, root / "prompts" / "note.tests.yaml")
    assert _kinds(root) == ["link_outside"]
