"""The HTML report: one self-contained page (no script, no external resource), every text from
the report escaped, a matrix of cases x profiles (x versions) whose cells open to the outputs,
the expectations and what failed; written whole."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from scriptorium import Engine
from scriptorium.evals import TestReport
from scriptorium.evals.html_report import html_report, write_html
from tests.evals.project import BAD, GOOD, fake, make_project, write_tests

HOSTILE = '<script>alert("x")</script> & </td>'


class Page(HTMLParser):
    """The tags, attributes and text of a page, and whether its tags nest properly."""

    VOID = frozenset({"meta", "br", "link", "img", "input", "hr"})

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.misnested: list[str] = []
        self.text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.misnested.append(tag)
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def cells(self) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == "td" and "cell" in (a.get("class") or "")]


def _report(tmp_path: Path, *, against: Path | None = None) -> TestReport:
    root = make_project(tmp_path / "project", flaky2=fake(json.dumps(GOOD), HOSTILE))
    write_tests(
        root,
        "contact",
        f"""
        repeat: 2
        cases:
          - name: finds ada
            artifacts: {{document: ../docs/ada.txt}}
            expect: {{pointer: {{/name: Ada Lovelace}}}}
          - name: {json.dumps(HOSTILE)}
            artifacts: {{document: ../docs/ada.txt}}
            expect: {{contains: {json.dumps(HOSTILE)}}}
        """,
    )
    return Engine(root).test(profiles=["good", "bad", "flaky2"], against=against)


def test_the_page_is_self_contained_and_escapes_everything(tmp_path: Path) -> None:
    text = html_report(_report(tmp_path))
    page = Page(text)
    assert not page.misnested
    assert not page.stack
    tags = {tag for tag, _ in page.tags}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed"}
    for _, attrs in page.tags:
        for name, value in attrs.items():
            assert not (name or "").startswith("on")
            assert name not in ("src", "href")
            assert "http:" not in (value or "")
            assert "https:" not in (value or "")
    assert "<script>" not in text  # the hostile case name and output are text, not markup
    assert HOSTILE in "".join(page.text)


def test_the_matrix_has_a_cell_per_case_and_profile_that_opens(tmp_path: Path) -> None:
    report = _report(tmp_path)
    page = Page(html_report(report))
    cells = page.cells()
    assert len(cells) == 2 * 3
    assert {(c["data-case"], c["data-profile"]) for c in cells} == {
        (case, profile) for case in ("finds ada", HOSTILE) for profile in ("good", "bad", "flaky2")
    }
    outcome = {(c["data-case"], c["data-profile"]): c["data-outcome"] for c in cells}
    assert outcome[("finds ada", "good")] == "passed"
    assert outcome[("finds ada", "bad")] == "failed"
    assert outcome[("finds ada", "flaky2")] == "failed"  # 1 of 2
    details = sum(tag == "details" for tag, _ in page.tags)
    assert details == len(cells)
    text = "".join(page.text)
    assert "1/2 (50% [9%\u201391%])" in text  # pass rate and interval
    assert "the value at /name is not the expected one" in text  # what failed
    assert '"/name": "Ada Lovelace"' in text  # the expectations
    assert BAD["name"] in text  # the output
    assert "judges' cost" in text
    assert "cases" in text


def test_with_against_each_profile_has_a_before_and_an_after_column(tmp_path: Path) -> None:
    old = make_project(tmp_path / "old", flaky2=fake(json.dumps(BAD)))
    report = _report(tmp_path, against=old)
    page = Page(html_report(report))
    cells = page.cells()
    assert len(cells) == 2 * 3 * 2
    versions = {(c["data-case"], c["data-profile"], c["data-version"]) for c in cells}
    assert ("finds ada", "flaky2", "before") in versions
    assert ("finds ada", "flaky2", "after") in versions
    text = "".join(page.text)
    assert "Against " in text
    assert "McNemar" in text
    assert "before" in text
    assert "after" in text


def test_write_replaces_the_file_whole_and_creates_folders(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "r.html"
    write_html(TestReport(), target)
    first = target.read_bytes()
    write_html(TestReport(cases=1), target)
    assert target.read_bytes() != first
    assert sorted(p.name for p in target.parent.iterdir()) == ["r.html"]
    assert target.stat().st_mode & 0o777 == 0o644


def test_a_failed_write_leaves_no_temporary(tmp_path: Path) -> None:
    (tmp_path / "dir.html").mkdir()  # a folder where the file would go: the rename fails
    with pytest.raises(IsADirectoryError):
        write_html(TestReport(), tmp_path / "dir.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.html"]
