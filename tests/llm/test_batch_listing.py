"""The listing of a provider's recent batches, written once for every batch adapter: pages are
followed newest first until one reaches past ``since``, the last page, or the page limit."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from scriptorium.llm.batches.calls import MAX_PAGES, Page, recent_batches
from scriptorium.llm.batches.port import RemoteBatch


def _batch(created_at: float) -> RemoteBatch:
    return RemoteBatch(id=f"b{created_at:g}", ended=False, created_at=created_at, size=1)


def _pages(times: list[float], per_page: int) -> tuple[list[str | None], Page]:
    """A listing of batches created at ``times`` (newest first), ``per_page`` at a time, and
    the cursors it was asked with."""
    ordered = sorted(times, reverse=True)
    asked: list[str | None] = []

    def page(cursor: str | None) -> tuple[list[RemoteBatch], str | None]:
        asked.append(cursor)
        start = 0 if cursor is None else int(cursor)
        items = [_batch(t) for t in ordered[start : start + per_page]]
        following = start + per_page
        return items, (str(following) if following < len(ordered) else None)

    return asked, page


@given(
    times=st.lists(st.integers(0, 1000).map(float), max_size=60, unique=True),
    per_page=st.integers(1, 7),
    since=st.integers(0, 1000).map(float),
)
def test_every_batch_since_is_found_within_the_page_limit(
    times: list[float], per_page: int, since: float
) -> None:
    """Every batch created at ``since`` or later on the pages read is returned, nothing older, and
    no page past the first that reaches back before ``since`` is asked for."""
    asked, page = _pages(times, per_page)
    found = recent_batches(page, since)
    assert all(b.created_at >= since for b in found)
    newer = sorted((t for t in times if t >= since), reverse=True)
    assert [b.created_at for b in found] == newer[: len(found)]
    assert len(asked) <= MAX_PAGES
    if len(asked) < MAX_PAGES:
        assert len(found) == len(newer)


def test_the_page_limit_stops_a_long_listing() -> None:
    """A listing longer than the page limit, all of it recent, is read for MAX_PAGES pages only."""
    asked, page = _pages([float(t) for t in range(100, 200)], 2)
    found = recent_batches(page, 0.0)
    assert len(asked) == MAX_PAGES
    assert len(found) == 2 * MAX_PAGES
    assert asked[:3] == [None, "2", "4"]
