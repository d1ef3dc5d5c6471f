"""Fault 9: a batch journal line torn by a crash or a full disk never glues the next record onto
it: records are written one whole line per write, and a torn tail is cut when the journal is opened
again, so a paid result is found on resume instead of being lost and paid again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scriptorium._journal import Journal
from scriptorium.cli import main
from scriptorium.cli.batch import read_done
from scriptorium.hashing import REQUEST_HASH_VERSION


def record(n: int) -> str:
    return json.dumps(
        {
            "line": n,
            "request_hash": f"sha256:{n:064x}",
            "hash_version": REQUEST_HASH_VERSION,
            "result": {"n": n},
        }
    )


def test_a_torn_tail_is_cut_and_the_next_record_starts_its_own_line(tmp_path: Path) -> None:
    """The complete record before the tear and the one appended after it are both found."""
    path = tmp_path / "out.jsonl.partial"
    path.write_text(record(1) + "\n" + record(2)[:25], encoding="utf-8")
    with Journal(path) as journal:
        assert journal.dropped == 25
        journal.append(record(3))
    done = read_done(path)
    assert sorted(r["line"] for r in done.values()) == [1, 3]
    assert path.read_text(encoding="utf-8").endswith(record(3) + "\n")


def test_a_journal_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    """A FIFO in the journal's place is an error at once, not a blocked open."""
    path = tmp_path / "fifo"
    os.mkfifo(path)
    with pytest.raises(OSError, match="not a regular file"):
        Journal(path)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(count=st.integers(0, 6), cut=st.integers(0, 2000), data=st.data())
def test_a_journal_cut_anywhere_loses_only_the_torn_record(
    tmp_path: Path, count: int, cut: int, data: st.DataObject
) -> None:
    """Whatever byte a crash stops at, reopening and appending keeps every complete record and
    the new one, each parseable on its own line."""
    path = tmp_path / f"j{count}-{cut}-{data.draw(st.integers(0, 10**9))}"
    full = "".join(record(n) + "\n" for n in range(count)).encode()
    torn = full[: min(cut, len(full))]
    path.write_bytes(torn)
    complete = torn.count(b"\n")
    with Journal(path) as journal:
        journal.append(record(99))
    lines = path.read_bytes().decode().splitlines()
    assert [json.loads(line)["line"] for line in lines] == [*range(complete), 99]


def test_batch_resumes_from_a_torn_journal(tmp_path: Path) -> None:
    """A batch whose journal holds one complete result and a torn one reuses the complete one,
    runs the rest, and writes every line."""
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "greet.prompt.md").write_text("---\nprofile: f\n---\nHi {{ name }}\n")
    (tmp_path / "profiles" / "f.yaml").write_text("provider: fake\noptions: {responses: [hello]}\n")
    rows = tmp_path / "in.jsonl"
    rows.write_text("".join(json.dumps({"inputs": {"name": n}}) + "\n" for n in "ABC"))
    out = tmp_path / "out.jsonl"
    args = ["batch", "greet", "--in", str(rows), "--out", str(out), "--root", str(tmp_path)]
    assert main(args) == 0
    first = out.read_text().splitlines()
    out.unlink()
    partial = tmp_path / "out.jsonl.partial"
    partial.write_text(first[0] + "\n" + first[1][: len(first[1]) // 2])
    assert main([*args, "--json"]) == 0
    after = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["line"] for r in after] == [1, 2, 3]
    assert after[0]["result"]["run_id"] == json.loads(first[0])["result"]["run_id"]
    assert after[1]["result"]["run_id"] != json.loads(first[1])["result"]["run_id"]
    assert not partial.exists()
