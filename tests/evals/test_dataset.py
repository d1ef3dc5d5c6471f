"""Datasets: cases from a JSONL or CSV file beside a tests file, its columns mapped to inputs,
artifacts and expectations, sampled by seed, pinned by sha256, confined to the project; run
through ``Engine.test`` and checked by ``check``."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from scriptorium import Engine
from scriptorium.errors import PromptLoadError
from scriptorium.evals.files import TestFiles
from tests.evals.project import make_project, write_tests


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def _csv(header: list[str], rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _cases(root: Path, prompt_id: str) -> list[Any]:
    return list(TestFiles(root / "prompts").get(prompt_id).cases)


def test_jsonl_rows_become_cases_named_by_id_or_row_number(root: Path) -> None:
    (root / "prompts" / "notes.jsonl").write_text(
        _jsonl(
            [
                {"id": "deploys", "topic": "deploys", "want": "Tuesdays"},
                {"topic": "rota", "want": ["six", "people"], "extra": 1},
                {"id": 7, "topic": "x", "want": "Thursdays"},
            ]
        ),
        "utf-8",
    )
    write_tests(
        root,
        "note",
        """
        cases: [{name: inline, inputs: {topic: a}}]
        dataset:
          path: notes.jsonl
          map: {topic: inputs.topic, want: expect.contains}
        """,
    )
    cases = _cases(root, "note")
    assert [c.name for c in cases] == ["inline", "deploys", "2", "7"]
    assert cases[1].inputs == {"topic": "deploys"}
    assert cases[1].expect.contains == ("Tuesdays",)
    assert cases[2].expect.contains == ("six", "people")  # a JSON list adds every item
    report = Engine(root).test(["note"])
    status = {c.case: c.status for c in report.all_cases()}
    assert status == {"inline": "passed", "deploys": "passed", "2": "passed", "7": "failed"}


def test_csv_maps_artifacts_and_reads_expected_values_as_json_when_they_are(root: Path) -> None:
    (root / "prompts" / "people.csv").write_text(
        _csv(
            ["id", "document", "who", "mail", "tag", "note"],
            [
                ["ada", "Ada Lovelace", "Ada Lovelace", '"ada@example.com"', "engines", "x"],
                ["wrong", "someone", "Grace Hopper", "", "", "y"],
                ["value", "Ada", '{"name": "Ada Lovelace"}', "", "", "z"],
            ],
        ),
        "utf-8",
    )
    write_tests(
        root,
        "contact",
        """
        profile: good
        dataset:
          path: people.csv
          map:
            document: artifacts.document
            who: expect.pointer./name
            mail: expect.pointer./email
            tag: expect.contains
        """,
    )
    cases = {c.name: c for c in _cases(root, "contact")}
    assert cases["ada"].artifacts["document"].text == "Ada Lovelace"
    assert cases["ada"].expect.pointer == {"/name": "Ada Lovelace", "/email": "ada@example.com"}
    assert cases["ada"].expect.contains == ("engines",)
    assert cases["wrong"].expect.pointer == {"/name": "Grace Hopper"}  # empty cells set nothing
    assert cases["wrong"].expect.contains is None
    assert cases["value"].expect.pointer == {"/name": {"name": "Ada Lovelace"}}
    report = Engine(root).test(["contact"])
    status = {c.case: c.status for c in report.all_cases()}
    assert status == {"ada": "passed", "wrong": "failed", "value": "failed"}


def test_expect_value_from_a_column(root: Path) -> None:
    (root / "prompts" / "v.jsonl").write_text(
        _jsonl(
            [
                {"id": "subset", "doc": "Ada", "want": {"name": "Ada Lovelace"}},
                {"id": "other", "doc": "Ada", "want": {"name": "Charles"}},
            ]
        ),
        "utf-8",
    )
    write_tests(
        root,
        "contact",
        "dataset: {path: v.jsonl, map: {doc: artifacts.document, want: expect.value}}",
    )
    report = Engine(root).test(["contact"])
    assert {c.case: c.status for c in report.all_cases()} == {
        "subset": "passed",
        "other": "failed",
    }


def test_without_a_map_every_column_but_id_is_an_input(root: Path) -> None:
    (root / "prompts" / "topics.csv").write_text(
        _csv(["id", "topic"], [["a", "deploys"], ["b", "rota"]]), "utf-8"
    )
    write_tests(root, "note", "dataset: {path: topics.csv}")
    cases = _cases(root, "note")
    assert [(c.name, c.inputs) for c in cases] == [
        ("a", {"topic": "deploys"}),
        ("b", {"topic": "rota"}),
    ]


def _sample(root: Path, sample: int, seed: int) -> list[str]:
    write_tests(root, "note", f"dataset: {{path: many.jsonl, sample: {sample}, seed: {seed}}}")
    return [c.name for c in _cases(root, "note")]


def test_sampling_is_deterministic_by_seed_and_keeps_file_order(root: Path) -> None:
    rows = [{"id": f"row{i:02d}", "topic": f"t{i}"} for i in range(40)]
    (root / "prompts" / "many.jsonl").write_text(_jsonl(rows), "utf-8")
    first = _sample(root, 5, 1)
    assert len(first) == 5
    assert len(set(first)) == 5
    assert first == sorted(first)  # file order
    assert _sample(root, 5, 1) == first  # the same seed, the same rows
    others = {tuple(_sample(root, 5, seed)) for seed in range(2, 8)}
    assert len(others | {tuple(first)}) > 1  # other seeds pick other rows
    assert len(_sample(root, 100, 1)) == 40  # more than there are: every row
    # The pick depends on the rows' names, not their places: a row added keeps the others.
    (root / "prompts" / "many.jsonl").write_text(
        _jsonl([{"id": "new", "topic": "t"}, *rows]), "utf-8"
    )
    again = _sample(root, 5, 1)
    assert [name for name in again if name != "new"] == first[: len(again) - ("new" in again)]


def test_a_pinned_sha256_that_does_not_match_is_refused(root: Path) -> None:
    data = _jsonl([{"id": "a", "topic": "x"}])
    (root / "prompts" / "pinned.jsonl").write_text(data, "utf-8")
    digest = hashlib.sha256(data.encode()).hexdigest()
    write_tests(root, "note", f"dataset: {{path: pinned.jsonl, sha256: {digest}}}")
    assert [c.name for c in _cases(root, "note")] == ["a"]
    (root / "prompts" / "pinned.jsonl").write_text(data + _jsonl([{"topic": "y"}]), "utf-8")
    with pytest.raises(PromptLoadError, match="pinned sha256") as caught:
        _cases(root, "note")
    assert caught.value.path == "note.tests.yaml"
    assert caught.value.reason == "invalid"


@pytest.mark.parametrize(
    ("spec", "files", "message"),
    [
        ("{path: ../../outside.jsonl}", {}, "outside the project"),
        ("{path: /etc/passwd.csv}", {}, "not absolute"),
        ("{path: missing.jsonl}", {}, "missing.jsonl"),
        ("{path: cases.txt}", {}, "a .jsonl or a .csv"),
        ("{path: d.jsonl, map: {a: output.x}}", {"d.jsonl": '{"a": 1}\n'}, "not a target"),
        ("{path: d.jsonl}", {"d.jsonl": "not json\n"}, "line 1: not JSON"),
        ("{path: d.jsonl}", {"d.jsonl": "[1, 2]\n"}, "a JSON object"),
        ("{path: d.csv}", {"d.csv": "id,topic\na,x,extra\n"}, "row 1: 3 cells"),
        ("{path: d.csv, map: {nope: inputs.topic}}", {"d.csv": "topic\nx\n"}, "column 'nope'"),
        ("{path: d.jsonl}", {"d.jsonl": '{"id": "a"}\n{"id": "a"}\n'}, "same name"),
        ("{path: d.jsonl}", {"d.jsonl": ""}, "holds no rows"),
        ("{path: d.jsonl, sha256: abc}", {"d.jsonl": "{}\n"}, "sha256"),
    ],
)
def test_a_bad_dataset_is_refused_naming_the_tests_file(
    root: Path, spec: str, files: dict[str, str], message: str
) -> None:
    for name, text in files.items():
        (root / "prompts" / name).write_text(text, "utf-8")
    write_tests(root, "note", f"dataset: {spec}")
    with pytest.raises(PromptLoadError, match=message) as caught:
        _cases(root, "note")
    assert "note.tests.yaml" in caught.value.message


def test_a_dataset_file_is_read_again_when_it_changes(root: Path) -> None:
    path = root / "prompts" / "d.jsonl"
    path.write_text(_jsonl([{"id": "a", "topic": "x"}]), "utf-8")
    write_tests(root, "note", "dataset: {path: d.jsonl}")
    files = TestFiles(root / "prompts")
    assert [c.name for c in files.get("note").cases] == ["a"]
    path.write_text(_jsonl([{"id": "a", "topic": "x"}, {"id": "bb", "topic": "y"}]), "utf-8")
    assert [c.name for c in files.get("note").cases] == ["a", "bb"]


def test_check_validates_the_cases_of_a_dataset(root: Path) -> None:
    (root / "prompts" / "d.jsonl").write_text(
        _jsonl([{"id": "ok", "topic": "x"}, {"id": "typo", "topik": "y"}]), "utf-8"
    )
    write_tests(root, "note", "dataset: {path: d.jsonl}")
    problems = [p for p in Engine(root).check() if p.kind.startswith("tests_")]
    assert problems, "an input the prompt does not declare is reported"
    assert any("topik" in p.message for p in problems)
    (root / "prompts" / "d.jsonl").write_text("{broken\n", "utf-8")
    codes = {p.kind for p in Engine(root).check()}
    assert "tests_invalid" in codes


def test_a_dataset_linked_from_outside_the_project_is_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_text(_jsonl([{"id": "a", "topic": "x"}]), "utf-8")
    (root / "prompts" / "linked.jsonl").symlink_to(outside)
    write_tests(root, "note", "dataset: {path: linked.jsonl}")
    with pytest.raises(PromptLoadError, match=r"dataset linked\.jsonl") as caught:
        _cases(root, "note")
    assert caught.value.path == "note.tests.yaml"
