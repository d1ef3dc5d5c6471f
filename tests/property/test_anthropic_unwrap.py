"""The wrapped tool input of the Anthropic stream: for any JSON value written as
``{"value": ...}`` in any layout and cut anywhere, the unwrapped deltas are the value's JSON."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.llm.anthropic.stream import Unwrap

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(VALUES, st.lists(st.integers(1, 9), min_size=1, max_size=40), st.sampled_from([None, 1, 2]))
def test_unwrapped_deltas_are_the_inner_value(
    value: Any, sizes: list[int], indent: int | None
) -> None:
    text = json.dumps({"value": value}, indent=indent)
    unwrap = Unwrap()
    pieces, at, turn = [], 0, 0
    while at < len(text):
        size = sizes[turn % len(sizes)]
        pieces.append(unwrap.feed(text[at : at + size]))
        at += size
        turn += 1
    pieces.append(unwrap.flush())
    assert json.loads("".join(pieces)) == value
