"""The lenient reader held to its rule by construction, on texts a damage model writes.

Hypothesis draws a JSON value and some slip families (:mod:`tests.property.damage`); the model
writes the value as a language model might, with one slip of each family. The reader must return
exactly the value, or refuse; never another value. A text whose slips are all of recoverable
families must be recovered; a text with a slip of a ``never`` family must be refused.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from scriptorium.validate.json.strict import parse_lenient
from tests.property.damage import FAMILIES, NEVER, RECOVERABLE, recall, same_value, write

_text = st.text(st.characters(codec="utf-8"), max_size=10)
_words = st.sampled_from(("New York", "ok", "hello world", "Paris", "été", "x"))
_numbers = st.one_of(
    st.integers(-(10**20), 10**20),
    st.integers(-100, 100),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from((0.5, -1.25, 1e-7, 6.02e23, 3.0, -0.0, 1e16, 0)),
)
_leaves = st.one_of(st.none(), st.booleans(), _numbers, _text, _words)
_keys = st.one_of(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True), _text)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(children, max_size=4), st.dictionaries(_keys, children, max_size=4))


_values = st.recursive(_leaves, _containers, max_leaves=10)
#: The whole answer is an object or an array (a scalar in prose is no answer).
_tops = st.one_of(
    st.dictionaries(_keys, _values, min_size=1, max_size=4), st.lists(_values, max_size=4)
)
_recoverable = st.lists(st.sampled_from(RECOVERABLE), max_size=3, unique=True)
_seeds = st.integers(0, 2**32 - 1)
# Derandomized: CI sees the same examples every run (a new slip class is found by changing the
# model or running with another seed by hand, not by a red build at random).
_FAST = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
_SLOW = settings(
    max_examples=3000,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def _keys_with_colons(value: Any) -> bool:
    if isinstance(value, dict):
        return any(":" in k or _keys_with_colons(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_keys_with_colons(v) for v in value)
    return False


def _check_recovered(value: Any, families: list[str], seed: int) -> None:
    case = write(value, tuple(families), seed)
    # A known refusal, never a wrong value: smart quotes around a value whose object has a key
    # holding a colon (`{"0:": “A”}`) read two ways to the reader, which refuses them as
    # ambiguous (internal_docs/validation.md, "Known refusals").
    assume(not ("smart_quotes" in case.families and _keys_with_colons(case.value)))
    outcome = parse_lenient(case.text)
    assert outcome.ok, (case.text, case.families, outcome.issues)
    assert same_value(outcome.value, case.value), (case.text, outcome.value)


def _check_refused(value: Any, family: str, others: list[str], seed: int) -> None:
    case = write(value, (family, *others), seed)
    outcome = parse_lenient(case.text)
    if family not in case.families:
        assert outcome.ok, case.text
        assert same_value(outcome.value, case.value), case.text
        return
    assert not outcome.ok, (case.text, case.families, outcome.value)


def _check_never_wrong(value: Any, families: list[str], seed: int) -> None:
    case = write(value, tuple(families), seed)
    outcome = parse_lenient(case.text)
    if outcome.ok:
        assert case.means, (case.text, case.families, outcome.value)
        assert same_value(outcome.value, case.value), (case.text, outcome.value)


@_FAST
@given(_tops, _recoverable, _seeds)
def test_recoverable_slips_are_recovered(value: Any, families: list[str], seed: int) -> None:
    """Slips of recoverable families, one to three at a time: the value comes back."""
    _check_recovered(value, families, seed)


@_FAST
@given(_tops, st.sampled_from(NEVER), st.lists(st.sampled_from(RECOVERABLE), max_size=2), _seeds)
def test_never_slips_are_refused(value: Any, family: str, others: list[str], seed: int) -> None:
    """A slip no careful reader can undo (a cut, a hole, code...) is refused, whatever else."""
    _check_refused(value, family, others, seed)


@_FAST
@given(_tops, st.lists(st.sampled_from(FAMILIES), max_size=4, unique=True), _seeds)
def test_any_slips_give_the_value_or_nothing(value: Any, families: list[str], seed: int) -> None:
    """Whatever the slips, a value returned is exactly the one the text means."""
    _check_never_wrong(value, families, seed)


@pytest.mark.parametrize("family", RECOVERABLE)
def test_each_recoverable_family_alone(family: str) -> None:
    """Each recoverable family on a fixed value that has a place for it."""
    value = {"name": "New York", "items": [1, "a", {"ok": True, "n": None}], "x": []}
    for seed in range(20):
        case = write(value, (family,), seed)
        outcome = parse_lenient(case.text)
        assert outcome.ok, (case.text, outcome.issues)
        assert same_value(outcome.value, case.value), (case.text, outcome.value)


@pytest.mark.slow
@_SLOW
@given(_tops, _recoverable, _seeds)
def test_recoverable_slips_are_recovered_at_length(
    value: Any, families: list[str], seed: int
) -> None:
    _check_recovered(value, families, seed)


@pytest.mark.slow
@_SLOW
@given(_tops, st.lists(st.sampled_from(FAMILIES), max_size=5, unique=True), _seeds)
def test_any_slips_give_the_value_or_nothing_at_length(
    value: Any, families: list[str], seed: int
) -> None:
    _check_never_wrong(value, families, seed)


@pytest.mark.slow
def test_recall_per_family_is_complete() -> None:
    """The recall table of ``python -m tests.property.damage``: every family as due, 0 wrong."""
    table = recall(200)
    assert {family for family, (total, _, _) in table.items() if total == 0} == set()
    assert {family: row for family, row in table.items() if row[0] != row[1] or row[2]} == {}


def test_a_colon_in_a_key_beside_smart_quotes_is_refused_never_misread() -> None:
    """The known refusal the recall properties set aside: refused as ambiguous, never another
    value."""
    outcome = parse_lenient('[{"0:": \u201cA\u201d}]')
    assert not outcome.ok
    assert [issue.keyword for issue in outcome.issues] == ["ambiguous"]
