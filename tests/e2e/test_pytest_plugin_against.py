"""``pytest --scriptorium --scriptorium-against REF`` in a real pytest process over a project in a
git repository: each item compares its case with the revision's version, shows the comparison,
fails for a ``must_pass`` case that regressed; the terminal summary gives the changed cases and
the paired test over the session, which fails the session when the candidate is worse."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.pytest_runs import run_pytest
from tests.evals.project import BAD, GOOD, fake, make_project, write_tests
from tests.evals.test_compare import git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_pytest(root, *args, timeout_s=300)


TESTS = """
profile: answer
repeat: {repeat}
cases:
  - name: kept
    artifacts: {{document: ../docs/ada.txt}}
    expect: {{contains: "{{"}}
  - name: must hold
    artifacts: {{document: ../docs/ada.txt}}
    expect: {{pointer: {{/name: Ada Lovelace}}}}
    must_pass: {must_pass}
"""


def _project(tmp_path: Path, *, repeat: int, must_pass: bool) -> Path:
    root = make_project(tmp_path / "project", answer=fake(json.dumps(GOOD)))
    write_tests(root, "contact", TESTS.format(repeat=repeat, must_pass=str(must_pass).lower()))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "v1")
    (root / "profiles" / "answer.yaml").write_text(fake(json.dumps(BAD)), "utf-8")
    return root


def test_a_must_pass_case_that_regressed_fails_its_item(tmp_path: Path) -> None:
    root = _project(tmp_path, repeat=1, must_pass=True)
    done = _pytest(root, "--scriptorium", "--scriptorium-against", "HEAD", "prompts", "-rA")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
    assert "regressed (must_pass): contact [answer] must hold: 1/1 passed before, 0/1 after" in (
        done.stdout
    )
    assert '~ /name: "Ada Lovelace" -> "Charles"' in done.stdout
    assert "scriptorium against HEAD" in done.stdout
    assert "0 fixed, 1 regressed, 1 same; paired exact test (McNemar, two-sided)" in done.stdout


def test_the_session_fails_when_the_candidate_is_worse_beyond_chance(tmp_path: Path) -> None:
    root = _project(tmp_path, repeat=2, must_pass=False)
    names = ("first", "second", "third")
    cases = "".join(
        f"  - {{name: {name}, artifacts: {{document: ../docs/ada.txt}}, "
        "expect: {pointer: {/name: Ada Lovelace}}}\n"
        for name in names
    )
    write_tests(root, "contact", f"profile: answer\nrepeat: 2\ncases:\n{cases}")
    done = _pytest(root, "--scriptorium", "--scriptorium-against", "HEAD", "prompts")
    # No item is worse beyond chance on its two pairs (p = 0.5), but the six of the session are.
    assert "3 passed" in done.stdout, done.stdout + done.stderr
    assert "0 fixed, 3 regressed, 0 same" in done.stdout
    assert "0 runs fixed, 6 regressed, p = 0.03125: WORSE" in done.stdout
    assert done.returncode == 1
