"""Cost in integer micro-USD: the table, overrides, unknown models, rounding."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.llm.model import Usage
from scriptorium.llm.pricing import (
    PRICE_TABLE,
    PRICE_TABLE_DATE,
    PRICE_TABLE_SOURCE,
    ModelPrice,
    cost_micro,
    derived_cache_price,
    price_for,
)


def test_the_table_is_dated_and_sourced() -> None:
    assert PRICE_TABLE_DATE == "2026-11"
    assert "pricing" in PRICE_TABLE_SOURCE


def test_every_price_is_integer_micro_usd_per_million_tokens() -> None:
    for price in PRICE_TABLE.values():
        assert all(type(v) is int and v >= 0 for v in vars(price).values() if v is not None)
    assert PRICE_TABLE["claude-sonnet-4-6"] == ModelPrice(3_000_000, 15_000_000, 3_750_000, 300_000)


@pytest.mark.parametrize(
    ("model", "listed"),
    [
        ("claude-sonnet-4-6", "claude-sonnet-4-6"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-opus-4-1@20250805", "claude-opus-4-1"),
        ("claude-haiku-4-5-latest", "claude-haiku-4-5"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13"),
        ("GPT-4.1", "gpt-4.1"),
    ],
)
def test_models_match_exactly_or_by_dated_suffix(model: str, listed: str) -> None:
    assert price_for(model) == PRICE_TABLE[listed]


@pytest.mark.parametrize("model", ["claude-sonnet-4-6-turbo", "gpt-4o-mini-x", "llama3", ""])
def test_other_suffixes_do_not_borrow_a_price(model: str) -> None:
    assert price_for(model) is None


def test_cost_sums_every_token_class_and_divides_once() -> None:
    usage = Usage(
        input_tokens=1000,
        output_tokens=200,
        cache_creation_input_tokens=400,
        cache_read_input_tokens=3000,
    )
    # 1000*3 + 200*15 + 400*3.75 + 3000*0.30 USD per Mtok = 0.0084 USD = 8400 micro-USD
    assert cost_micro("claude-sonnet-4-6", usage) == (8400, None)


def test_fractions_of_a_micro_dollar_round_half_up_once() -> None:
    # 1 token of haiku-4-5 cache read = 0.1 micro-USD per token -> 5 tokens = 0.5 -> 1
    assert cost_micro("claude-haiku-4-5", Usage(cache_read_input_tokens=5)) == (1, None)
    assert cost_micro("claude-haiku-4-5", Usage(cache_read_input_tokens=4)) == (0, None)
    # Summed before dividing: 0.4 (4 cache reads) + 1.25 (1 cache write) = 1.65 -> 2, where
    # rounding each class first would give 0 + 1.
    usage = Usage(cache_read_input_tokens=4, cache_creation_input_tokens=1)
    assert cost_micro("claude-haiku-4-5", usage) == (2, None)


def test_an_unknown_model_costs_zero_and_says_so() -> None:
    cost, note = cost_micro("my-local-llama", Usage(input_tokens=10**6))
    assert cost == 0
    assert note is not None
    assert "my-local-llama" in note
    assert "cost 0" in note


def test_a_profile_override_wins_and_is_converted_exactly() -> None:
    usage = Usage(input_tokens=10**6, output_tokens=10**6)
    override = {"input": 0.1, "output": 0.2, "cache_write": None, "cache_read": None}
    assert cost_micro("claude-sonnet-4-6", usage, override) == (300_000, None)


def test_an_override_prices_an_unknown_model_and_derives_cache_classes_from_input() -> None:
    """Cache write 1.25x and cache read 0.1x of the override's input price."""
    usage = Usage(cache_creation_input_tokens=10**6, cache_read_input_tokens=10**6)
    assert cost_micro("my-local-llama", usage, {"input": 2.0, "output": 4.0}) == (2_700_000, None)


def test_an_override_without_cache_prices_derives_them_from_its_own_input_price() -> None:
    """A profile's input price decides its cache prices, not the table's (which it overrides)."""
    usage = Usage(cache_read_input_tokens=10**6)
    assert cost_micro("claude-sonnet-4-6", usage, {"input": 1.0, "output": 1.0}) == (100_000, None)


def test_null_cache_prices_mean_the_same_as_missing_ones() -> None:
    usage = Usage(cache_creation_input_tokens=10**6, cache_read_input_tokens=10**6)
    override = {"input": 2.0, "output": 4.0, "cache_write": None, "cache_read": None}
    assert cost_micro("x", usage, override) == cost_micro("x", usage, {"input": 2.0, "output": 4.0})


@pytest.mark.parametrize(
    ("name", "expected"),
    [("cache_write", 3_750_000), ("cache_write_1h", 6_000_000), ("cache_read", 300_000)],
)
def test_derived_cache_prices_use_the_standard_multipliers(name: str, expected: int) -> None:
    assert derived_cache_price(3_000_000, name) == expected


def test_each_cache_class_is_priced_apart_and_rounded_once() -> None:
    """Sonnet: 5-minute writes 3.75, 1-hour writes 6.00, reads 0.30 USD per Mtok; three tokens
    of each class would round to 0 each if rounded per class."""
    usage = Usage(
        input_tokens=1,
        output_tokens=1,
        cache_creation_input_tokens=5,
        cache_write_1h_input_tokens=2,
        cache_read_input_tokens=3,
    )
    micro_per_mtok = 3_000_000 + 15_000_000 + 3 * 3_750_000 + 2 * 6_000_000 + 3 * 300_000
    expected = (micro_per_mtok + 500_000) // 1_000_000
    assert cost_micro("claude-sonnet-4-6", usage) == (expected, None)
    assert expected == 42


def test_one_hour_writes_never_exceed_the_writes() -> None:
    """A usage claiming more 1-hour writes than writes prices only the writes."""
    usage = Usage(cache_creation_input_tokens=10**6, cache_write_1h_input_tokens=5 * 10**6)
    assert cost_micro("claude-sonnet-4-6", usage) == (6_000_000, None)


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, 10**9),
    st.integers(0, 10**9),
    st.integers(0, 10**9),
    st.integers(0, 10**9),
    st.sampled_from(sorted(PRICE_TABLE)),
)
def test_cost_equals_the_exact_decimal_sum_rounded_half_up(
    inp: int, out: int, write: int, read: int, model: str
) -> None:
    price = PRICE_TABLE[model]
    usage = Usage(
        input_tokens=inp,
        output_tokens=out,
        cache_creation_input_tokens=write,
        cache_read_input_tokens=read,
    )
    exact = (
        Decimal(inp * price.input + out * price.output + write * price.cache_write)
        + Decimal(read * price.cache_read)
    ) / Decimal(1_000_000)
    expected = int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP))
    assert cost_micro(model, usage) == (expected, None)
