"""IdentityMemo: values remembered by the identity of the objects they come from."""

from __future__ import annotations

from scriptorium.usecase.memo import IdentityMemo


class Frozen:
    """An object standing for a frozen definition or profile."""


def test_same_objects_and_detail_compute_once() -> None:
    """A second get with the same objects and detail returns the remembered value."""
    memo: IdentityMemo[int] = IdentityMemo()
    calls: list[int] = []
    a, b = Frozen(), Frozen()

    def compute(n: int) -> int:
        calls.append(n)
        return n * 2

    assert memo.get((a, b), "x", compute, 3) == 6
    assert memo.get((a, b), "x", compute, 4) == 6
    assert calls == [3]


def test_another_object_or_detail_computes_again() -> None:
    """A different object (even an equal one) or detail is a miss."""
    memo: IdentityMemo[str] = IdentityMemo()
    a, b = Frozen(), Frozen()
    assert memo.get((a,), 1, lambda: "a1") == "a1"
    assert memo.get((b,), 1, lambda: "b1") == "b1"
    assert memo.get((a,), 2, lambda: "a2") == "a2"
    assert memo.get((a, b), 1, lambda: "ab") == "ab"
    assert memo.get((a, a), 1, lambda: "aa") == "aa"


def test_a_recycled_id_never_serves_a_stale_value() -> None:
    """Entries keep their objects alive, so a new object cannot take an old one's id."""
    memo: IdentityMemo[int] = IdentityMemo()
    first = Frozen()
    memo.get((first,), None, lambda: 1)
    del first
    fresh = [Frozen() for _ in range(100)]
    assert all(memo.get((obj,), None, lambda: 2) == 2 for obj in fresh)


def test_unhashable_details_are_computed_and_not_kept() -> None:
    """An unhashable detail still gets its value, every time afresh."""
    memo: IdentityMemo[int] = IdentityMemo()
    a = Frozen()
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return 1

    for _ in range(2):
        assert memo.get((a,), ["unhashable"], compute) == 1
    assert len(calls) == 2


def test_the_memory_is_bounded() -> None:
    """Past the limit the memory starts over instead of growing."""
    memo: IdentityMemo[int] = IdentityMemo(limit=4)
    keep = [Frozen() for _ in range(10)]
    for i, obj in enumerate(keep):
        memo.get((obj,), None, lambda i=i: i)
    assert len(memo._entries) <= 4
