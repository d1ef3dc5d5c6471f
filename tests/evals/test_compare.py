"""``Engine.test(against=...)``: the same cases on a reference version (a git revision read
without touching the working tree, or a directory) and on the project as it is; per-case
changes, output diffs, the paired exact test and the verdict."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scriptorium import Engine
from scriptorium.errors import InvalidRequestError
from scriptorium.evals.compare import value_diff
from scriptorium.evals.expect import json_equal
from scriptorium.evals.reference import open_reference
from tests.evals.project import BAD, GOOD, fake, make_project, write_tests

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

CONTACT_TESTS = """
profile: answer
repeat: {repeat}
cases:
  - name: finds ada
    artifacts: {{document: ../docs/ada.txt}}
    expect: {{pointer: {{/name: Ada Lovelace}}}}
    must_pass: {must_pass}
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _repository(tmp_path: Path, answer: str, *, repeat: int = 1, must_pass: bool = False) -> Path:
    """A git repository whose first commit holds a project in ``proj/`` with the profile
    ``answer`` answering ``answer``; returns the project."""
    repo = tmp_path / "repo"
    root = make_project(repo / "proj", answer=fake(answer))
    write_tests(
        root,
        "contact",
        CONTACT_TESTS.format(repeat=repeat, must_pass=str(must_pass).lower()),
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "v1")
    return root


def _answer(root: Path, answer: str) -> None:
    (root / "profiles" / "answer.yaml").write_text(fake(answer), "utf-8")


def _state(repo: Path) -> tuple[str, str, bytes, dict[str, bytes]]:
    files = {
        str(p.relative_to(repo)): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }
    return (
        git(repo, "status", "--porcelain", "--untracked-files=all"),
        git(repo, "rev-parse", "HEAD"),
        (repo / ".git" / "index").read_bytes(),
        files,
    )


def test_a_git_revision_is_compared_without_touching_the_working_tree(tmp_path: Path) -> None:
    root = _repository(tmp_path, json.dumps(GOOD), must_pass=True)
    repo = root.parent
    _answer(root, json.dumps(BAD))  # the candidate: an uncommitted change
    (root / "prompts" / "staged.txt").write_text("staged", "utf-8")
    git(repo, "add", "proj/prompts/staged.txt")
    before = _state(repo)
    report = Engine(root).test(against="HEAD")
    assert _state(repo) == before
    comparison = report.comparison
    assert comparison is not None
    assert comparison.against == "HEAD"
    assert comparison.revision == git(repo, "rev-parse", "HEAD").strip()
    (change,) = comparison.cases
    assert (change.change, change.before_status, change.after_status) == (
        "regressed",
        "passed",
        "failed",
    )
    assert (change.before_pass_rate, change.after_pass_rate) == (1.0, 0.0)
    assert change.must_pass
    assert comparison.must_pass_regressed == ("contact [answer] finds ada",)
    assert not comparison.ok
    assert not report.ok
    # One pair only: not evidence that it is worse, but a must_pass case regressed.
    assert (comparison.fixed_pairs, comparison.regressed_pairs, comparison.p_value) == (0, 1, 1.0)
    assert not comparison.worse
    assert (comparison.passed_before, comparison.passed_after) == (1, 0)
    assert comparison.latency_p50_ms_before is not None
    assert comparison.latency_p50_ms_after is not None
    assert comparison.before is not None
    assert comparison.before.all_cases()[0].passed == 1
    diff = change.diff
    assert diff is not None
    assert diff.kind == "value"
    assert diff.before == GOOD
    assert diff.after == BAD
    assert '~ /name: "Ada Lovelace" -> "Charles"' in diff.lines


def test_a_regression_that_may_be_noise_does_not_fail(tmp_path: Path) -> None:
    root = _repository(tmp_path, json.dumps(GOOD))
    _answer(root, json.dumps(BAD))
    report = Engine(root).test(against="HEAD")
    assert report.comparison is not None
    assert report.comparison.regressed == 1
    assert report.comparison.p_value == 1.0
    assert report.ok
    assert report.comparison.ok


def test_repeats_that_regress_together_are_worse_beyond_chance(tmp_path: Path) -> None:
    root = _repository(tmp_path, json.dumps(GOOD), repeat=6)
    _answer(root, json.dumps(BAD))
    comparison = Engine(root).test(against="HEAD").comparison
    assert comparison is not None
    assert (comparison.fixed_pairs, comparison.regressed_pairs) == (0, 6)
    assert comparison.p_value == pytest.approx(2 / 64)
    assert comparison.worse
    assert not comparison.ok
    # Five pairs would not have been enough at the 0.05 level.
    five = Engine(root).test(repeat=5, against="HEAD").comparison
    assert five is not None
    assert five.p_value == pytest.approx(2 / 32)
    assert five.ok


def test_a_fixed_case_passes(tmp_path: Path) -> None:
    root = _repository(tmp_path, json.dumps(BAD), repeat=6, must_pass=True)
    _answer(root, json.dumps(GOOD))
    report = Engine(root).test(against="HEAD")
    comparison = report.comparison
    assert comparison is not None
    assert [c.change for c in comparison.cases] == ["fixed"]
    assert (comparison.fixed_pairs, comparison.regressed_pairs) == (6, 0)
    assert comparison.p_value == pytest.approx(2 / 64)
    assert not comparison.worse
    assert comparison.ok
    assert report.ok


def test_the_reference_prompt_is_the_one_run(tmp_path: Path) -> None:
    """Only the prompt changes: the old schema refused the answer, the new one accepts it."""
    root = _repository(tmp_path, json.dumps(GOOD))
    prompt = root / "prompts" / "contact.prompt.md"
    new = prompt.read_text("utf-8")
    prompt.write_text(new.replace("tags: {type: array", "tags: {type: string"), "utf-8")
    git(root.parent, "commit", "-qam", "v2: tags are one string")
    prompt.write_text(new, "utf-8")
    comparison = Engine(root).test(against="HEAD").comparison
    assert comparison is not None
    assert [c.change for c in comparison.cases] == ["fixed"]
    # The commit before it had the candidate's prompt: nothing changed.
    same = Engine(root).test(against="HEAD~1").comparison
    assert same is not None
    assert [c.change for c in same.cases] == ["same"]


def test_a_text_output_is_diffed_as_text(tmp_path: Path) -> None:
    root = _repository(tmp_path, json.dumps(GOOD))
    write_tests(
        root,
        "note",
        "cases: [{name: says tuesday, inputs: {topic: deploys}, expect: {contains: Tuesdays}}]",
    )
    git(root.parent, "add", "-A")
    git(root.parent, "commit", "-qm", "note tests")
    (root / "profiles" / "note.yaml").write_text(fake("Deploys move to\nThursdays."), "utf-8")
    comparison = Engine(root).test(["note"], against="HEAD").comparison
    assert comparison is not None
    (change,) = comparison.cases
    assert change.change == "regressed"
    assert change.diff is not None
    assert change.diff.kind == "text"
    assert "+Thursdays." in change.diff.lines
    assert any(line.startswith("-Deploys move to Tuesdays") for line in change.diff.lines)


def test_a_directory_holding_prompts_is_a_reference(tmp_path: Path) -> None:
    old = make_project(tmp_path / "old", answer=fake(json.dumps(BAD)))
    root = make_project(tmp_path / "new", answer=fake(json.dumps(GOOD)))
    write_tests(root, "contact", CONTACT_TESTS.format(repeat=1, must_pass="false"))
    comparison = Engine(root).test(against=old).comparison
    assert comparison is not None
    assert comparison.revision is None
    assert [c.change for c in comparison.cases] == ["fixed"]
    # A directory with no profiles/: the project's profiles serve it.
    shutil.rmtree(old / "profiles")
    same = Engine(root).test(against=str(old)).comparison
    assert same is not None
    assert [c.change for c in same.cases] == ["same"]


def test_a_prompt_the_reference_lacks_is_listed_as_new(tmp_path: Path) -> None:
    root = _repository(tmp_path, json.dumps(GOOD))
    (root / "prompts" / "extra.prompt.md").write_text("---\nprofile: note\n---\nHi.\n", "utf-8")
    write_tests(root, "extra", "cases: [{name: hello, expect: {contains: Deploys}}]")
    comparison = Engine(root).test(against="HEAD").comparison
    assert comparison is not None
    assert comparison.new_cases == ("extra [note] hello",)
    assert [c.case for c in comparison.cases] == ["finds ada"]


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("no-such-branch", "not a directory, nor a revision"),
        ("-n", "does not start with '-'"),
        ("", "not a directory or a git revision"),
    ],
)
def test_a_reference_that_is_neither_is_refused_before_anything_runs(
    tmp_path: Path, ref: str, message: str
) -> None:
    root = _repository(tmp_path, json.dumps(GOOD))
    with pytest.raises(InvalidRequestError, match=message) as caught:
        Engine(root).test(against=ref)
    assert caught.value.field == "against"


def test_a_directory_without_prompts_or_a_project_outside_git_is_refused(tmp_path: Path) -> None:
    root = make_project(tmp_path / "alone")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InvalidRequestError, match="holds no prompts/"):
        Engine(root).test(against=empty)
    with (
        pytest.raises(InvalidRequestError, match="not in a git repository"),
        open_reference("HEAD", root),
    ):
        pass


def test_a_revision_without_the_project_is_refused(tmp_path: Path) -> None:
    root = _repository(tmp_path, json.dumps(GOOD))
    repo = root.parent
    branch = git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
    (repo / "README").write_text("x", "utf-8")
    git(repo, "checkout", "-q", "--orphan", "other")
    git(repo, "rm", "-rq", "--cached", ".")
    git(repo, "add", "README")
    git(repo, "commit", "-qm", "nothing")
    git(repo, "checkout", "-q", "-f", branch)
    with pytest.raises(InvalidRequestError, match="has no proj/prompts/"):
        Engine(root).test(against="other")


def test_the_copy_of_a_revision_is_removed_afterwards(tmp_path: Path) -> None:
    root = _repository(tmp_path, json.dumps(GOOD))
    with open_reference("HEAD", root) as reference:
        copy = reference.root
        assert (copy / "prompts" / "contact.prompt.md").is_file()
        assert (copy / "profiles" / "answer.yaml").is_file()
        assert not (copy / "docs").exists()  # only prompts/ and profiles/
    assert not copy.exists()


def test_value_diff_names_each_pointer() -> None:
    before = {"a": 1, "b": [1, 2, 3], "c/d": {"x": True}, "gone": None}
    after = {"a": 1.0, "b": [1, 5], "c/d": {"x": 1}, "new": "n"}
    assert list(value_diff(before, after)) == [
        "~ /b/1: 2 -> 5",
        "- /b/2: 3",
        "~ /c~1d/x: true -> 1",
        "- /gone: null",
        '+ /new: "n"',
    ]
    assert list(value_diff(1, 2)) == ["~ '': 1 -> 2"]
    assert list(value_diff({"a": [1]}, {"a": [1]})) == []


def test_a_baseline_and_a_reference_together(tmp_path: Path) -> None:
    root = _repository(tmp_path, json.dumps(GOOD))
    engine = Engine(root)
    earlier = engine.test()
    _answer(root, json.dumps(BAD))
    report = engine.test(against="HEAD", baseline=earlier)
    assert report.comparison is not None
    assert report.comparison.regressed == 1
    assert report.comparison.ok  # one pair: not evidence
    assert report.baseline is not None
    assert report.baseline.regressions == 1  # 1/1 -> 0/1 is, by the baseline's rule
    assert not report.ok


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(json_values, json_values)
def test_value_diff_is_empty_exactly_when_the_values_are_equal(a: object, b: object) -> None:
    lines = list(value_diff(a, b))
    assert (not lines) == json_equal(a, b)
    assert not list(value_diff(a, a))
    # Each line names where: an op, a JSON Pointer (or '' for the whole value), a colon.
    assert all(line[:2] in ("~ ", "- ", "+ ") for line in lines)
