"""Other projects' parser test inputs, labelled by what a careful reader would make of them.

Each file under ``tests/validate/json/corpora/`` names where its inputs come from (repository, path,
commit, licence). Only the inputs are taken; each case is labelled here, whatever the other
project's test expects: ``valid`` (JSON, passes unchanged), ``clear`` (one reading: must be
recovered), ``pinned`` (clear to a reader, refused by a documented rule of ours), ``refuse`` (cut
off, to be filled in, code, several values or readings). A value other than the expected one, or
any value where a refusal is due, is a wrong value: there must be none. Clear recall must reach
95 % on each corpus.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scriptorium.validate.json.strict import parse_lenient

CORPORA = sorted((Path(__file__).parent / "corpora").glob("*.json"))
RECALL_FLOOR = 0.95


def _same(left: Any, right: Any) -> bool:
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


def measure(path: Path) -> dict[str, Any]:
    """Counts per label, the clear cases recovered, and every wrong value with its input."""
    document = json.loads(path.read_text("utf-8"))
    counts: dict[str, int] = {}
    recovered = 0
    wrong: list[tuple[str, str, Any]] = []
    for case in document["cases"]:
        label = case["label"]
        counts[label] = counts.get(label, 0) + 1
        outcome = parse_lenient(case["input"])
        if not outcome.ok:
            if label == "valid":
                wrong.append((label, case["input"], "refused"))
            continue
        if label == "refuse" or not _same(outcome.value, case["expected"]):
            wrong.append((label, case["input"], outcome.value))
        elif label == "clear":
            recovered += 1
        elif label == "valid" and outcome.mode != "strict":
            wrong.append((label, case["input"], "not passed through"))
    return {"counts": counts, "recovered": recovered, "wrong": wrong}


def test_there_are_corpora() -> None:
    assert CORPORA


@pytest.mark.parametrize("path", CORPORA, ids=lambda path: path.stem)
def test_corpus_has_no_wrong_value_and_recovers_the_clear_cases(path: Path) -> None:
    """0 wrong values; clear cases recovered at 95 % or more (the figure is printed)."""
    result = measure(path)
    clear = result["counts"].get("clear", 0)
    print(f"{path.stem}: {result['counts']}, clear recovered {result['recovered']}/{clear}")
    assert result["wrong"] == []
    assert clear
    assert result["recovered"] / clear >= RECALL_FLOOR


@pytest.mark.parametrize("path", CORPORA, ids=lambda path: path.stem)
def test_corpus_cases_say_where_they_come_from(path: Path) -> None:
    document = json.loads(path.read_text("utf-8"))
    source = document["source"]
    assert {"repository", "path", "commit", "licence"} <= set(source)
    assert len(source["commit"]) == 40
    assert all(
        case["label"] in {"valid", "clear", "pinned", "refuse"} for case in document["cases"]
    )
    assert all(("expected" in case) == (case["label"] != "refuse") for case in document["cases"])
