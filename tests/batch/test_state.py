"""The provider-batch state machine on its own: no I/O, so every rule is checked directly."""

from __future__ import annotations

import json

import pytest

from scriptorium.batch import state as machine
from scriptorium.batch.state import BatchState, Row
from scriptorium.llm.batches import BatchLimits, Entry, RemoteBatch

LIMITS = BatchLimits(max_requests=3, max_bytes=1000)


def _state(*ids: str | None) -> BatchState:
    return BatchState("job1", "anthropic", [Row({"prompt_id": "p"}, i) for i in ids])


def _entries(*ids: str, size: int = 10, group: str = "") -> dict[str, Entry]:
    return {i: Entry(i, {}, size, group) for i in ids}


def test_distinct_ids_keep_first_row_order_and_skip_unprepared_rows() -> None:
    assert _state("b", "a", None, "b", "c").distinct_ids() == ["b", "a", "c"]


def test_a_new_job_submits_its_first_chunk_within_the_request_limit() -> None:
    state = _state("a", "b", "c", "d", "a")
    step = machine.next_step(state, _entries("a", "b", "c", "d"), LIMITS)
    assert step == machine.Submit(("a", "b", "c"))


def test_a_chunk_stops_before_the_byte_limit_but_holds_at_least_one_row() -> None:
    entries = {"a": Entry("a", {}, 600), "b": Entry("b", {}, 600), "c": Entry("c", {}, 5000)}
    assert machine.plan_chunk([entries["a"], entries["b"]], LIMITS) == ["a"]
    assert machine.plan_chunk([entries["c"], entries["a"]], LIMITS) == ["c"]


def test_a_chunk_holds_one_group_only() -> None:
    entries = [Entry("a", {}, 1, "m1"), Entry("b", {}, 1, "m2"), Entry("c", {}, 1, "m1")]
    assert machine.plan_chunk(entries, LIMITS) == ["a", "c"]


def test_an_in_doubt_chunk_is_looked_up_before_anything_else_is_sent() -> None:
    state = _state("a", "b", "c", "d")
    chunk = machine.begin_chunk(state, ["a", "b", "c"], now=100.0)
    step = machine.next_step(state, _entries("d"), LIMITS)
    assert step == machine.Lookup(chunk)


def test_submitted_chunks_are_polled_once_everything_is_sent() -> None:
    state = _state("a")
    chunk = machine.begin_chunk(state, ["a"], now=1.0)
    machine.submitted(chunk, "batch-1")
    assert machine.next_step(state, {}, LIMITS) == machine.Poll((chunk,))
    machine.ended(chunk, [])
    assert machine.next_step(state, {}, LIMITS) == machine.Done()


def test_expired_rows_are_sent_again_only_when_resuming() -> None:
    state = _state("a", "b")
    chunk = machine.begin_chunk(state, ["a", "b"], now=1.0)
    machine.submitted(chunk, "batch-1")
    machine.ended(chunk, ["b"])
    assert machine.next_step(state, _entries("b"), LIMITS) == machine.Done()
    step = machine.next_step(state, _entries("b"), LIMITS, resend_unfinished=True)
    assert step == machine.Submit(("b",))
    again = machine.begin_chunk(state, ["b"], now=2.0)
    assert machine.chunk_for(state, "b") is again
    assert machine.chunk_for(state, "a") is chunk


def test_a_tagged_provider_matches_the_in_doubt_chunk_by_tag_only() -> None:
    state = _state("a", "b")
    chunk = machine.begin_chunk(state, ["a", "b"], now=100.0)
    other = RemoteBatch("x", False, 100.0, 2, tag="someone-else")
    ours = RemoteBatch("y", False, 100.0, 2, tag=chunk.tag)
    assert machine.match_in_doubt(state, chunk, [other, ours], tagged=True) == ours
    assert machine.match_in_doubt(state, chunk, [other], tagged=True) is None


def test_an_untagged_provider_matches_by_time_and_size() -> None:
    state = _state("a", "b")
    chunk = machine.begin_chunk(state, ["a", "b"], now=10_000.0)
    older = RemoteBatch("old", True, 10_000.0 - machine.CLOCK_SKEW_S - 1, 2)
    wrong_size = RemoteBatch("big", False, 10_000.0, 5)
    ours = RemoteBatch("ours", False, 10_001.0, 2)
    found = machine.match_in_doubt(state, chunk, [older, wrong_size, ours], tagged=False)
    assert found == ours
    assert machine.match_in_doubt(state, chunk, [older, wrong_size], tagged=False) is None


def test_several_untagged_candidates_are_told_apart_by_their_custom_ids() -> None:
    state = _state("a", "b")
    chunk = machine.begin_chunk(state, ["a", "b"], now=100.0)
    one, two = RemoteBatch("one", True, 100.0, 2), RemoteBatch("two", False, 100.0, 2)
    assert machine.match_in_doubt(state, chunk, [one, two], tagged=False) == "undecided"
    ids = {"one": frozenset({"c", "d"})}
    assert machine.match_in_doubt(state, chunk, [one, two], tagged=False, ids_of=ids) == (
        "undecided"
    )
    ids = {"one": frozenset({"c", "d"}), "two": frozenset({"a", "b"})}
    assert machine.match_in_doubt(state, chunk, [one, two], tagged=False, ids_of=ids) == two


def test_a_batch_already_claimed_by_another_chunk_is_never_matched() -> None:
    state = _state("a", "b")
    first = machine.begin_chunk(state, ["a"], now=100.0)
    machine.submitted(first, "one")
    second = machine.begin_chunk(state, ["b"], now=100.0)
    one = RemoteBatch("one", False, 100.0, 1)
    assert machine.match_in_doubt(state, second, [one], tagged=False) is None


def test_the_state_survives_its_json_form() -> None:
    state = _state("a", None, "b")
    chunk = machine.begin_chunk(state, ["a", "b"], now=5.0)
    machine.submitted(chunk, "batch-1")
    machine.ended(chunk, ["b"])
    text = json.dumps(state.to_json())
    assert BatchState.from_json(json.loads(text)) == state


def test_a_state_of_another_version_is_refused() -> None:
    data = _state("a").to_json()
    data["version"] = 99
    with pytest.raises(ValueError, match="version"):
        BatchState.from_json(data)


def test_a_state_saved_under_another_request_hash_form_is_refused() -> None:
    data = _state("a").to_json()
    data["hash_version"] = 1
    with pytest.raises(ValueError, match="hash form"):
        BatchState.from_json(data)
