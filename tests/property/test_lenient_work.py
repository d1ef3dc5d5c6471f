"""The lenient parser's work is linear in its input, whatever the input; recursion stays bounded.

Work is counted, not timed (the machine is shared): a ``Budget`` counts every character each run
of the reader looks at, plus a fixed cost per run. Time against input size is measured in
``bench/lenient.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.validate.json.lenient import recover
from scriptorium.validate.json.readings import RUN_COST, WORK_PER_CHAR, Budget, OutOfWork
from scriptorium.validate.json.tolerant.cursor import MAX_DEPTH
from tests.property.test_lenient_corruptions import CORRUPTIONS, tokens, values

# Pieces adversarial texts are built from: brackets of both kinds, every kind of quote, commas,
# colons, comments, fences, reasoning tags, words and numbers.
PIECES = [
    "{", "}", "[", "]", '"', "'", "“", "”", '"""', ",", ":", " ", "\n", "a", "1", "-", "null",
    "True", "ok", '"a"', "'b'", '"x "y"', "//", "/*", "*/", "#", "```", "<think>", "</think>",
]  # fmt: skip


def _work(text: str, schema: bool) -> Budget:
    budget = Budget(len(text))
    outcome = recover(
        text,
        schema_check=(lambda value: True) if schema else None,
        max_depth=MAX_DEPTH,
        budget=budget,
    )
    assert outcome.ok or outcome.issues
    return budget


def _bound(text: str) -> int:
    # The budget is checked after each run, so one run (at most the text plus its set-up) may
    # overshoot it.
    return Budget(len(text)).limit + len(text) + RUN_COST


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=40), st.integers(1, 60), st.booleans()
)
def test_work_is_bounded_by_a_multiple_of_the_length_on_adversarial_text(
    pieces: list[str], repeats: int, schema: bool
) -> None:
    """Repeated fragments of JSON syntax never make the parser read more than linear work."""
    text = "".join(pieces) * repeats
    assert _work(text, schema).used <= _bound(text)


@pytest.mark.parametrize(
    "family",
    [
        lambda n: "[" * n,
        lambda n: "[" * n + "}" * n,
        lambda n: ("[" * 50 + "}" * 50 + " ") * (n // 100),
        lambda n: '{"a":' * (n // 5),
        lambda n: '"' * n,
        lambda n: '"a "' * (n // 4),
        lambda n: '["a "b", ' * (n // 9),
        lambda n: "“" * n,
        lambda n: "[" + "," * n + "]",
        lambda n: "{" + "," * n + "}",
        lambda n: "[" + "1 " * (n // 2) + "]",
        lambda n: "{a} " * (n // 4),
        lambda n: '}[""“' * (n // 5),
        lambda n: "```\n[1,\n```\n" * (n // 12),
    ],
    ids=[
        "deep-open",
        "deep-wrong-closers",
        "wrong-closer-groups",
        "deep-objects",
        "quotes",
        "quoted-words",
        "inner-quotes",
        "smart-quotes",
        "comma-run",
        "comma-run-object",
        "numbers-a-space-apart",
        "prose-braces",
        "doubled-quotes",
        "broken-fences",
    ],
)
@pytest.mark.parametrize("schema", [False, True])
def test_named_adversarial_families_stay_linear(family: Any, schema: bool) -> None:
    """Deep brackets, many quotes, long runs of commas: bounded work at every size, and the
    work per character does not grow with the size (measured at 2,000 and 8,000 characters)."""
    small, large = family(2_000), family(8_000)
    small_work, large_work = _work(small, schema).used, _work(large, schema).used
    assert large_work <= _bound(large)
    # Linear: four times the text costs at most about four times the work (plus the slack).
    assert large_work <= 4.5 * small_work + 10_000


# The spots the third recovery round added that read two ways, repeated through a text.
ROUND_FAMILIES = {
    "stray-quote-items": lambda n: "[" + '"a" b", ' * (n // 8) + '"c"]',
    "early-closers": lambda n: '{"a": 1}, "b": 2}' * (n // 17),
    "doubled-quote-keys": lambda n: "{" + '""k"": 1, ' * (n // 10) + "}",
    "tuples-and-loose-numbers": lambda n: "[" + "(.5, +1, 1_0), " * (n // 15) + "]",
    "python-adjacent-strings": lambda n: "[" + "'a' 'b', " * (n // 9) + "]",
    "grouped-numbers": lambda n: "[" + "1,000.5, " * (n // 9) + "]",
    "misspelled-literals": lambda n: "{" + "k: ture, " * (n // 9) + "}",
    "over-escaped-quotes": lambda n: '["' + 'x\\\\"y ' * (n // 6) + '"]',
    "quotes-after-delimiters": lambda n: '{"a": "x, ' * (n // 9) + '"b": 1}',
    "fences-in-strings": lambda n: '{"a": "\n```{}```\n",\n' * (n // 18) + "}",
}


@pytest.mark.parametrize("family", list(ROUND_FAMILIES.values()), ids=list(ROUND_FAMILIES))
@pytest.mark.parametrize("schema", [False, True])
def test_the_round_three_choice_points_stay_linear(family: Any, schema: bool) -> None:
    """Texts built from the newer two-way spots: bounded work, and no growth per character
    (2,000 against 8,000 characters)."""
    small, large = family(2_000), family(8_000)
    small_work, large_work = _work(small, schema).used, _work(large, schema).used
    assert large_work <= _bound(large)
    assert large_work <= 4.5 * small_work + 10_000


@settings(max_examples=150, deadline=None)
@given(values, st.sampled_from(sorted(CORRUPTIONS)), st.data())
def test_ordinary_slips_cost_a_small_fraction_of_the_budget(
    value: Any, name: str, data: st.DataObject
) -> None:
    """A real output with a slip is read a handful of times at most, far below the budget."""
    text = json.dumps(value, indent=2)
    corrupted = CORRUPTIONS[name](text, tokens(text), value)
    if not corrupted:
        return
    sample = data.draw(st.sampled_from(corrupted))
    budget = _work(sample, schema=True)
    assert budget.used <= (WORK_PER_CHAR // 4) * len(sample) + 2_000


def test_the_budget_stops_a_parse_that_reads_too_much() -> None:
    """Charging past the limit raises, and the lenient parser turns that into an issue."""
    budget = Budget(10)
    with pytest.raises(OutOfWork):
        budget.charge(budget.limit + 1)
    starved = Budget(0)
    starved.limit = 0
    outcome = recover('{"a": 1,}', schema_check=None, max_depth=MAX_DEPTH, budget=starved)
    assert not outcome.ok
    assert outcome.issues[0].keyword == "parse"


def test_nesting_past_the_bound_is_an_issue_not_a_recursion_error() -> None:
    """Depth is refused at the bound whichever reading reaches it."""
    for text in ["[" * 10_000 + "}" * 10_000, "{'a': " * 5_000, "[{" * 5_000 + "]" * 3]:
        outcome = recover(text, schema_check=None, max_depth=MAX_DEPTH, budget=Budget(len(text)))
        assert not outcome.ok
