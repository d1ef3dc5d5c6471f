"""The batch state file: whole, atomic, and never torn by a failed write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scriptorium.batch import state as machine
from scriptorium.batch.state import BatchState, Row
from scriptorium.batch.store import StateFile
from scriptorium.errors import InvalidRequestError


def _state(*ids: str) -> BatchState:
    return BatchState("job1", "openai", [Row({"prompt_id": "p"}, i) for i in ids])


def test_a_saved_state_loads_back_equal(tmp_path: Path) -> None:
    store = StateFile(tmp_path / "job.state.json")
    state = _state("a", "b")
    machine.submitted(machine.begin_chunk(state, ["a", "b"], now=1.0), "batch-1")
    store.save(state)
    assert store.load() == state
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.state.json"]


def test_a_write_that_fails_leaves_the_previous_state_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = StateFile(tmp_path / "job.state.json")
    store.save(_state("a"))

    def refuse(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(InvalidRequestError):
        store.save(_state("a", "b"))
    monkeypatch.undo()
    assert store.load() == _state("a")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.state.json"]


def test_temporary_files_left_by_a_killed_save_are_swept(tmp_path: Path) -> None:
    """Only side files named as scriptorium names them: a user's look-alike is kept."""
    (tmp_path / ".job.state.json.scriptorium-abc123.tmp").write_text("{", "utf-8")
    (tmp_path / ".job.state.json.abc123").write_text("mine", "utf-8")
    store = StateFile(tmp_path / "job.state.json")
    store.save(_state("a"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".job.state.json.abc123",
        "job.state.json",
    ]


def test_a_file_that_is_not_a_batch_state_is_an_invalid_request(tmp_path: Path) -> None:
    path = tmp_path / "job.state.json"
    path.write_text('{"something": "else"}', "utf-8")
    with pytest.raises(InvalidRequestError) as caught:
        StateFile(path).load()
    assert caught.value.__cause__ is not None
