"""Reading tests files: the strict YAML rules, unknown keys refused, every value checked, artifact
paths relative to the file and confined to the project, and the pure expectation helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scriptorium.artifact.model import ArtifactContent
from scriptorium.errors import ArtifactLoadError, InvalidRequestError, PromptLoadError
from scriptorium.evals.expect import deep_subset, json_equal, resolve_pointer
from scriptorium.evals.files import TestFiles, artifact_path, case_artifacts
from scriptorium.evals.parse import parse_tests


def _parse(text: str) -> object:
    return parse_tests(text, prompt_id="extract/contact", source="extract/contact.tests.yaml")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("cases: []", "at least one case"),
        ("[1, 2]", "must be a mapping"),
        ("cases: [{name: a, bogus: 1}]", "cases[0].bogus: unknown key"),
        ("cases: [{name: a, expect: {contain: x}}]", "cases[0].expect.contain: unknown key"),
        ("cases: [{name: a}]\nprompt_id: x", "set from the file's name"),
        ("repeat: 0\ncases: [{name: a}]", "repeat"),
        ("cases: [{name: a, min_pass_rate: 1.5}]", "min_pass_rate"),
        ("cases: [{name: a}, {name: a}]", "same name"),
        ("cases: [{name: a, expect: {pointer: {name: x}}}]", "JSON Pointer"),
        ("cases: [{name: a, expect: {pointer: {/a~2: x}}}]", "JSON Pointer"),
        ("cases: [{name: a, expect: {regex: '(a+)+\\1'}}]", "the pattern"),
        ("cases: [{name: a, expect: {regex: '('}}]", "does not compile"),
        ("cases: [{name: a, expect: {contains: ''}}]", "empty string"),
        ("cases: [{name: a, expect: {max_cost_micro: -1}}]", "max_cost_micro"),
        ("cases: [{name: a, expect: {judge: {profile: x}}}]", "rubric"),
        ("cases: [{name: a, expect: {judge: {profile: Bad Name, rubric: r}}}]", "profile"),
        ("profile: &p x\ncases: [{name: *p}]", "anchors"),
        ("cases: [{name: !!str a}]", "explicit tags"),
        ("cases: [{name: a}]\ncases: [{name: b}]", "duplicate key"),
    ],
)
def test_an_invalid_tests_file_is_refused_naming_where(text: str, why: str) -> None:
    with pytest.raises(
        PromptLoadError, match=r"tests file prompts/extract/contact\.tests\.yaml"
    ) as err:
        _parse(text)
    assert why in err.value.message
    assert err.value.reason == "invalid"
    assert err.value.path == "extract/contact.tests.yaml"


def test_a_valid_file_reads_as_plain_data() -> None:
    tests = parse_tests(
        "profile: p\nrepeat: 3\ncases:\n  - name: a\n    expect: {contains: x, regex: [b, c], value: null}\n",
        prompt_id="x",
        source="x.tests.yaml",
    )
    case = tests.cases[0]
    assert (tests.profile, tests.repeat, case.min_pass_rate) == ("p", 3, 1.0)
    assert case.expect.contains == ("x",)
    assert case.expect.regex == ("b", "c")
    assert case.expect.expects_value  # value: null expects null; left out expects nothing
    assert not tests.cases[0].expect.pointer


def test_the_repository_lists_and_reads_tests_beside_prompts(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    (prompts / "extract").mkdir(parents=True)
    (prompts / "extract" / "contact.tests.yaml").write_text("cases: [{name: a}]", "utf-8")
    (prompts / "Bad.tests.yaml").write_text("cases: [{name: a}]", "utf-8")
    outside = tmp_path / "elsewhere.tests.yaml"
    outside.write_text("cases: [{name: a}]", "utf-8")
    os.symlink(outside, prompts / "linked.tests.yaml")
    files = TestFiles(prompts)
    assert files.list() == ["extract/contact"]
    assert files.get("extract/contact").cases[0].name == "a"
    with pytest.raises(PromptLoadError, match="not found") as missing:
        files.get("nothere")
    assert missing.value.reason == "not_found"
    with pytest.raises(PromptLoadError, match="outside") as linked:
        files.get("linked")
    assert linked.value.reason == "unreadable"
    with pytest.raises(InvalidRequestError):
        files.get("../escape")


def test_artifact_paths_are_relative_to_the_tests_file_and_stay_in_the_project(
    tmp_path: Path,
) -> None:
    tests = parse_tests(
        "cases: [{name: a, artifacts: {doc: ../../docs/a.txt, pasted: {text: hello}}}]",
        prompt_id="extract/contact",
        source="extract/contact.tests.yaml",
    )
    assert artifact_path(tests, "../../docs/a.txt") == "docs/a.txt"
    assert artifact_path(tests, "sample.txt") == "prompts/extract/sample.txt"
    for bad in ("/etc/passwd", "../../../x", "C:/x"):
        with pytest.raises(ValueError, match=r"outside|absolute"):
            artifact_path(tests, bad)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Ada", "utf-8")
    artifacts = case_artifacts(tests, tests.cases[0], tmp_path)
    assert artifacts["doc"] == ArtifactContent(b"Ada", filename="a.txt")
    assert artifacts["pasted"] == ArtifactContent("hello")
    (tmp_path / "docs" / "a.txt").unlink()
    os.symlink("/etc/hostname", tmp_path / "docs" / "a.txt")
    with pytest.raises(ArtifactLoadError, match="outside"):
        case_artifacts(tests, tests.cases[0], tmp_path)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(json_values)
def test_every_value_contains_itself(value: object) -> None:
    assert json_equal(value, value)
    assert deep_subset(value, value)
    assert resolve_pointer(value, "") is value


def test_deep_subset_and_json_equality_follow_json() -> None:
    seen = {"a": 1, "b": {"c": [1, {"d": True, "e": 2}], "f": "x"}}
    assert deep_subset({"b": {"c": [1, {"d": True}]}}, seen)
    assert not deep_subset({"b": {"c": [1]}}, seen)  # arrays match item by item, same length
    assert not deep_subset({"a": True}, seen)  # true is not 1
    assert not deep_subset({"a": "1"}, seen)
    assert deep_subset({"a": 1.0}, seen)  # 1 and 1.0 are the same JSON number
    assert not deep_subset({"z": None}, seen)  # a missing key is not null
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})
    assert resolve_pointer(seen, "/b/c/1/e") == 2
    assert resolve_pointer({"a/b": {"~": 3}}, "/a~1b/~0") == 3
    for missing in ("/x", "/b/c/9", "/b/c/01", "/a/b"):
        with pytest.raises(KeyError):
            resolve_pointer(seen, missing)
