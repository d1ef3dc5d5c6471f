"""What a generation cost, in integer micro-USD.

Prices are held as integer micro-USD per million tokens per token class, so a cost is
``sum(tokens * price) / 1_000_000`` computed once, in integers, rounded half up: no float drift,
and equal usage always costs the same on every machine.

Token classes follow Anthropic's usage semantics, which :class:`~scriptorium.llm.model.Usage`
adopts: ``input_tokens`` are the *uncached* input tokens; ``cache_creation_input_tokens`` and
``cache_read_input_tokens`` are counted apart. (OpenAI's ``prompt_tokens`` include cached tokens, so
its adapter subtracts them before they reach here.)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from scriptorium.llm.model import Usage

__all__ = [
    "CACHE_MULTIPLIERS",
    "PRICE_TABLE",
    "PRICE_TABLE_DATE",
    "PRICE_TABLE_SOURCE",
    "ModelPrice",
    "cost_micro",
    "price_for",
]

PRICE_TABLE_DATE = "2026-11"
PRICE_TABLE_SOURCE = (
    "the providers' public pricing pages: https://platform.claude.com/docs/en/about-claude/pricing "
    "and https://openai.com/api/pricing/ (standard tier; batch, long-context and data-residency "
    "surcharges not modelled)"
)

_MICRO = 1_000_000


@dataclass(frozen=True)
class ModelPrice:
    """Integer micro-USD per million tokens for each token class. ``cache_write`` is the 5-minute
    cache write, ``cache_write_1h`` the 1-hour one."""

    input: int
    output: int
    cache_write: int
    cache_read: int
    cache_write_1h: int = 0


def _usd(
    input: str, output: str, cache_write: str, cache_read: str, cache_write_1h: str | None = None
) -> ModelPrice:
    """A price from USD-per-Mtok strings, converted exactly (strings, so no float rounding). The
    1-hour write defaults to twice the input price, Anthropic's multiplier."""
    values = [int(Decimal(v) * _MICRO) for v in (input, output, cache_write, cache_read)]
    one_hour = values[0] * 2 if cache_write_1h is None else int(Decimal(cache_write_1h) * _MICRO)
    return ModelPrice(values[0], values[1], values[2], values[3], cache_write_1h=one_hour)


# Anthropic: 5-minute cache writes cost 1.25x input, 1-hour writes 2x, reads 0.1x. The usage
# object reports the 1-hour part of the writes apart (cache_creation.ephemeral_1h_input_tokens).
_OPUS_45 = _usd("5", "25", "6.25", "0.50")
_OPUS_4 = _usd("15", "75", "18.75", "1.50")
_SONNET_4 = _usd("3", "15", "3.75", "0.30")
_HAIKU_45 = _usd("1", "5", "1.25", "0.10")

# OpenAI bills no premium for writing its automatic cache (and has no 1-hour tier), so both
# write prices are the input price.
_PRICES: dict[str, ModelPrice] = {
    "claude-opus-4-8": _OPUS_45,
    "claude-opus-4-7": _OPUS_45,
    "claude-opus-4-6": _OPUS_45,
    "claude-opus-4-5": _OPUS_45,
    "claude-opus-4-1": _OPUS_4,
    "claude-opus-4-0": _OPUS_4,
    "claude-opus-4": _OPUS_4,
    "claude-sonnet-4-6": _SONNET_4,
    "claude-sonnet-4-5": _SONNET_4,
    "claude-sonnet-4-0": _SONNET_4,
    "claude-sonnet-4": _SONNET_4,
    "claude-3-7-sonnet": _SONNET_4,
    "claude-haiku-4-5": _HAIKU_45,
    "claude-3-5-haiku": _usd("0.80", "4", "1", "0.08"),
    "claude-3-haiku": _usd("0.25", "1.25", "0.30", "0.03"),
    "gpt-5": _usd("1.25", "10", "1.25", "0.125", "1.25"),
    "gpt-5-mini": _usd("0.25", "2", "0.25", "0.025", "0.25"),
    "gpt-5-nano": _usd("0.05", "0.40", "0.05", "0.005", "0.05"),
    "gpt-4.1": _usd("2", "8", "2", "0.50", "2"),
    "gpt-4.1-mini": _usd("0.40", "1.60", "0.40", "0.10", "0.40"),
    "gpt-4.1-nano": _usd("0.10", "0.40", "0.10", "0.025", "0.10"),
    "gpt-4o": _usd("2.50", "10", "2.50", "1.25", "2.50"),
    "gpt-4o-2024-05-13": _usd("5", "15", "5", "5", "5"),  # the first snapshot kept its launch price
    "gpt-4o-mini": _usd("0.15", "0.60", "0.15", "0.075", "0.15"),
    "o1": _usd("15", "60", "15", "7.50", "15"),
    "o1-mini": _usd("1.10", "4.40", "1.10", "0.55", "1.10"),
    "o3": _usd("2", "8", "2", "0.50", "2"),
    "o3-mini": _usd("1.10", "4.40", "1.10", "0.55", "1.10"),
    "o4-mini": _usd("1.10", "4.40", "1.10", "0.275", "1.10"),
}

#: The built-in table: model name -> price. Read-only by convention; profiles override per model.
PRICE_TABLE: Mapping[str, ModelPrice] = _PRICES

# Snapshot suffixes that name a dated version of a listed model: -20250929, -2024-08-06, -latest,
# and Vertex's @20250929.
_DATED_SUFFIX = re.compile(r"(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-latest|@\d{8})$")


def price_for(model: str) -> ModelPrice | None:
    """The table price of ``model``: an exact match, else the name without its dated suffix."""
    name = model.strip().lower()
    found = _PRICES.get(name)
    if found is None:
        found = _PRICES.get(_DATED_SUFFIX.sub("", name))
    return found


def _override_micro(value: object) -> int | None:
    """USD per Mtok -> integer micro-USD per Mtok, exactly via Decimal, rounded half up.

    Below a micro-USD per *million* tokens nothing is lost that any bill could show.
    """
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    try:
        micro = Decimal(str(value)) * _MICRO
    except InvalidOperation:
        return None
    return int(micro.to_integral_value(rounding=ROUND_HALF_UP))


#: Cache prices a profile leaves out, as multiples of its input price (Anthropic's: 5-minute
#: writes 1.25x, 1-hour writes 2x, reads 0.1x).
CACHE_MULTIPLIERS = {
    "cache_write": Decimal("1.25"),
    "cache_write_1h": Decimal("2"),
    "cache_read": Decimal("0.1"),
}


def _from_override(override: Mapping[str, float | None], table: ModelPrice | None) -> ModelPrice:
    """A price from a profile's ``pricing``. A missing (or null) input or output price comes from
    the table; a missing cache price is derived from the input price by the standard multipliers."""
    given = {
        k: _override_micro(override.get(k))
        for k in ("input", "output", "cache_write", "cache_read", "cache_write_1h")
    }
    input_price = given["input"] if given["input"] is not None else (table.input if table else 0)
    output_price = (
        given["output"] if given["output"] is not None else (table.output if table else 0)
    )

    def cached(name: str) -> int:
        explicit = given[name]
        if explicit is not None:
            return explicit
        derived = Decimal(input_price) * CACHE_MULTIPLIERS[name]
        return int(derived.to_integral_value(rounding=ROUND_HALF_UP))

    return ModelPrice(
        input_price,
        output_price,
        cached("cache_write"),
        cached("cache_read"),
        cached("cache_write_1h"),
    )


def cost_micro(
    model: str, usage: Usage, override: Mapping[str, float | None] | None = None
) -> tuple[int, str | None]:
    """The cost of ``usage`` on ``model`` in integer micro-USD, and a note when there is no price.

    ``override`` (a profile's ``pricing``, USD per million tokens) wins over the table. An unknown
    model costs 0 and the note says so; the adapter puts it in ``metadata["pricing"]``.
    """
    table = price_for(model)
    if override:
        price = _from_override(override, table)
    elif table is not None:
        price = table
    else:
        return 0, f"unknown model {model!r}: cost 0 (no price in the {PRICE_TABLE_DATE} table)"
    one_hour = min(usage.cache_write_1h_input_tokens, usage.cache_creation_input_tokens)
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + (usage.cache_creation_input_tokens - one_hour) * price.cache_write
        + one_hour * price.cache_write_1h
        + usage.cache_read_input_tokens * price.cache_read
    )
    return (total + _MICRO // 2) // _MICRO, None
