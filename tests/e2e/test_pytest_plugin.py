"""The pytest plugin in a real pytest process over a project on disk: ``pytest --scriptorium``
collects one item per case and profile, passes and fails them with the failing expectations and
the values seen, and without the flag collects nothing and imports nothing of scriptorium's."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.pytest_runs import run_pytest
from tests.evals.project import make_project, write_tests


def _project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "project")
    write_tests(
        root,
        "contact",
        """
        cases:
          - name: right person
            artifacts: {document: ../docs/ada.txt}
            expect: {pointer: {/name: Ada Lovelace}}
          - name: wrong person
            artifacts: {document: ../docs/ada.txt}
            expect: {pointer: {/name: Grace Hopper}, contains: Grace}
        """,
    )
    write_tests(root, "note", "cases: [{name: a note, inputs: {topic: deploys}}]")
    return root


def test_pytest_scriptorium_runs_every_case_as_a_test(tmp_path: Path) -> None:
    root = _project(tmp_path)
    done = run_pytest(root, "--scriptorium", "-p", "scriptorium.pytest_plugin", "-v")
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "prompts/contact.tests.yaml::right person[good] PASSED" in out
    assert "prompts/contact.tests.yaml::wrong person[good] FAILED" in out
    assert "prompts/note.tests.yaml::a note[note] PASSED" in out
    assert "1 failed, 2 passed" in out
    # The failure names the expectations with the values seen.
    assert "repeat 1: pointer /name: the value at /name is not the expected one" in out
    assert "expected: 'Grace Hopper'" in out
    assert "seen:     'Ada Lovelace'" in out
    assert "repeat 1: contains: the output does not contain it" in out


def test_profiles_given_to_pytest_make_the_matrix(tmp_path: Path) -> None:
    root = _project(tmp_path)
    args = ["--scriptorium", "--scriptorium-profile", "good", "--scriptorium-profile", "bad"]
    done = run_pytest(root, *args, "prompts/contact.tests.yaml", "-v")
    assert "right person[good] PASSED" in done.stdout, done.stdout + done.stderr
    assert "right person[bad] FAILED" in done.stdout
    assert "3 failed, 1 passed" in done.stdout  # the wrong person fails on both


def test_without_the_flag_the_plugin_collects_nothing(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / "test_plain.py").write_text(
        "import sys\n\n"
        "def test_nothing_of_scriptorium_beyond_the_plugin_is_loaded():\n"
        "    loaded = sorted(m for m in sys.modules if m.startswith('scriptorium'))\n"
        "    assert 'scriptorium.pytest_plugin' in loaded\n"
        "    assert 'scriptorium.engine' not in loaded\n"
        "    assert 'yaml' not in sys.modules and 'jinja2' not in sys.modules\n",
        "utf-8",
    )
    done = run_pytest(root, "-p", "scriptorium.pytest_plugin", "-v")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert ".tests.yaml" not in done.stdout


def test_a_broken_tests_file_is_a_collection_error(tmp_path: Path) -> None:
    root = _project(tmp_path)
    write_tests(root, "note", "cases: [{name: a, expect: {bogus: 1}}]")
    done = run_pytest(root, "--scriptorium", "-p", "scriptorium.pytest_plugin")
    assert done.returncode != 0
    assert (
        "prompt_load: tests file prompts/note.tests.yaml: cases[0].expect.bogus: unknown key"
        in (done.stdout)
    )
