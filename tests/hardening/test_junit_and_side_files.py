"""JUnit reports stay well-formed whatever the outputs hold and count the same as the pytest
plugin; side files beside a user's file are created exclusively, never through a link, and a
taken name is refused naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from scriptorium import Engine
from scriptorium._sidefiles import MARK, SideFileTaken, create_exclusive, replacing
from scriptorium.cli import main
from scriptorium.evals.junit import junit_outcome, junit_xml, xml_safe
from tests.evals.project import fake, make_project, write_tests

REPO = Path(__file__).resolve().parents[2]
NASTY = "ok\x02\x1b[31mred\x0b\x0c\x7f\ufffe end"


def _project(tmp_path: Path) -> Path:
    root = make_project(
        tmp_path / "project",
        noisy=fake(NASTY),
        # A provider call that fails at once: nothing listens on this port.
        down=(
            "provider: openai\nmodel: gpt-4o-mini\nendpoint: http://127.0.0.1:9/v1\n"
            "api_key_env: DOWN_KEY\nsettings: {max_retries: 0, timeout_s: 5}\n"
        ),
    )
    write_tests(
        root,
        "note",
        """
        cases:
          - name: fine
            inputs: {topic: x}
          - name: wrong words
            inputs: {topic: x}
            expect: {contains: "never there"}
          - name: mute judge
            inputs: {topic: x}
            expect: {judge: {profile: judge-mute, rubric: Fine.}}
        """,
    )
    return root


def _parse(data: bytes) -> ET.Element:
    return ET.fromstring(data)  # noqa: S314 - a document written by this test


def test_junit_is_well_formed_when_outputs_hold_control_characters(tmp_path: Path) -> None:
    root = _project(tmp_path)
    report = Engine(root).test(["note"], ["noisy"])
    document = junit_xml(report)
    tree = _parse(document)
    for element in tree.iter():
        texts = [*element.attrib.values(), element.text or "", element.tail or ""]
        assert all(xml_safe(text) == text for text in texts)
    assert b"#x1B" in document


def test_a_failed_provider_call_is_an_error_and_a_failed_expectation_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOWN_KEY", "sk-down-0000000000")
    root = _project(tmp_path)
    report = Engine(root).test(["note"], ["noisy", "down"])
    kinds = {(c.profile, c.case): junit_outcome(c) for c in report.all_cases()}
    assert kinds[("noisy", "fine")] is None
    assert kinds[("noisy", "wrong words")] == "failure"
    assert kinds[("noisy", "mute judge")] == "error"
    assert kinds[("down", "fine")] == "error"  # the provider's call failed: not judged
    suites = {s.get("name"): s for s in _parse(junit_xml(report)).iter("testsuite")}
    down = suites["note [down]"]
    assert (down.get("failures"), down.get("errors")) == ("0", "3")
    noisy = suites["note [noisy]"]
    assert (noisy.get("failures"), noisy.get("errors")) == ("1", "1")


@pytest.mark.slow
def test_the_pytest_plugin_counts_as_the_cli_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOWN_KEY", "sk-down-0000000000")
    root = _project(tmp_path)
    cli_xml = tmp_path / "new" / "dir" / "cli.xml"  # missing parents are created
    main(
        ["test", "note", "-p", "noisy", "-p", "down", "--root", str(root), "--junit", str(cli_xml)]
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(REPO)
    plugin_xml = tmp_path / "plugin.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--scriptorium",
         "--scriptorium-profile", "noisy", "--scriptorium-profile", "down",
         "prompts/note.tests.yaml", f"--junitxml={plugin_xml}"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip

    def counts(path: Path) -> tuple[int, int, int]:
        tree = _parse(path.read_bytes())
        suites = list(tree.iter("testsuite"))
        return (
            sum(int(s.get("tests") or 0) for s in suites),
            sum(int(s.get("failures") or 0) for s in suites),
            sum(int(s.get("errors") or 0) for s in suites),
        )

    assert counts(cli_xml) == counts(plugin_xml) == (6, 1, 4)


# --- side files --------------------------------------------------------------------------------


def test_a_replaced_file_goes_through_a_fresh_hidden_side_file(tmp_path: Path) -> None:
    target = tmp_path / "report.xml"
    with replacing(target) as handle:
        (side,) = [p for p in tmp_path.iterdir() if p.name != "report.xml"]
        assert side.name.startswith(".report.xml" + MARK)
        handle.write(b"<x/>")
    assert target.read_bytes() == b"<x/>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.xml"]


def test_a_failed_write_removes_only_its_own_side_file(tmp_path: Path) -> None:
    target = tmp_path / "out.xml"
    target.write_text("before")
    mine = tmp_path / "out.xml.tmp"
    mine.write_text("a user's file")
    with pytest.raises(RuntimeError), replacing(target):
        raise RuntimeError("boom")
    assert target.read_text() == "before"
    assert mine.read_text() == "a user's file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.xml", "out.xml.tmp"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX symlinks")
@pytest.mark.parametrize("shape", ["dangling", "to a file", "to a directory"])
def test_a_taken_side_name_is_refused_naming_it_never_followed(tmp_path: Path, shape: str) -> None:
    victim = tmp_path / "victim"
    if shape == "to a file":
        victim.write_text("keep")
    elif shape == "to a directory":
        victim.mkdir()
    link = tmp_path / ".x.scriptorium-lock"
    link.symlink_to(victim)
    with pytest.raises(SideFileTaken, match=r"\.x\.scriptorium-lock"):
        create_exclusive(link)
    assert link.is_symlink()
    if shape == "to a file":
        assert victim.read_text() == "keep"
    else:
        assert not victim.is_file()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX symlinks")
def test_junit_never_writes_through_a_link_at_the_old_temporary_name(tmp_path: Path) -> None:
    root = _project(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "reports" / "j.xml"
    out.parent.mkdir()
    (out.parent / "j.xml.tmp").symlink_to(victim)
    assert main(["test", "note", "-p", "noisy", "--root", str(root), "--junit", str(out)]) == 1
    assert victim.read_text() == "precious"
    assert out.read_bytes().startswith(b"<?xml")


def _batch_project(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    root = tmp_path / "b"
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "hi.prompt.md").write_text("---\nprofile: f\n---\nHi {{ who }}\n")
    (root / "profiles" / "f.yaml").write_text("provider: fake\noptions: {responses: [hey]}\n")
    rows = root / "rows.jsonl"
    rows.write_text("".join(json.dumps({"inputs": {"who": w}}) + "\n" for w in "xyz"))
    out = root / "results.jsonl"
    args = ["batch", "hi", "--in", str(rows), "--out", str(out), "--root", str(root)]
    return root, out, args


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX symlinks")
def test_batch_never_writes_through_links_at_the_old_side_names(tmp_path: Path) -> None:
    _root, out, args = _batch_project(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out.with_name(out.name + ".tmp").symlink_to(victim)
    assert main(args) == 0
    assert victim.read_text() == "precious"
    assert len(out.read_text().splitlines()) == 3


def test_a_users_file_at_the_journal_name_is_refused_and_kept(tmp_path: Path) -> None:
    _root, out, args = _batch_project(tmp_path)
    journal = out.with_name(out.name + ".partial")
    journal.write_text("my own notes, not a journal\n")
    assert main(args) == 2
    assert journal.read_text() == "my own notes, not a journal\n"
    assert not out.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX symlinks")
def test_a_link_at_the_journal_name_is_refused_not_followed(tmp_path: Path) -> None:
    _root, out, args = _batch_project(tmp_path)
    victim = tmp_path / "victim.jsonl"
    victim.write_text("")
    out.with_name(out.name + ".partial").symlink_to(victim)
    assert main(args) == 2
    assert victim.read_text() == ""


def test_junit_creates_missing_parent_directories(tmp_path: Path) -> None:
    root = _project(tmp_path)
    out = tmp_path / "ci" / "reports" / "deep" / "junit.xml"
    assert main(["test", "note", "-p", "noisy", "--root", str(root), "--junit", str(out)]) == 1
    tree = _parse(out.read_bytes())
    assert tree.tag == "testsuites"
    assert sorted(p.name for p in out.parent.iterdir()) == ["junit.xml"]
