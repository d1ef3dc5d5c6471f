"""What a generation cost, in integer micro-USD.

Prices are held as integer micro-USD per million tokens per token class, so a cost is
``sum(tokens * price) / 1_000_000`` computed once, in integers, rounded half up: no float drift,
and equal usage always costs the same on every machine.

Each provider's prices live in its package (its spec's ``prices``) and its adapter prices with
them; :data:`PRICE_TABLE` is the built-in providers' tables merged, for code that prices a model
without knowing its provider.

Token classes follow Anthropic's usage semantics, which :class:`~scriptorium.llm.model.Usage`
adopts: ``input_tokens`` are the *uncached* input tokens; ``cache_creation_input_tokens`` and
``cache_read_input_tokens`` are counted apart. (OpenAI's ``prompt_tokens`` include cached tokens, so
its adapter subtracts them before they reach here.)

Reasoning tokens are output tokens, priced at the output rate exactly once. That is a rule of how
each adapter fills :class:`~scriptorium.llm.model.Usage`, not of this module (which never reads
``reasoning_tokens``): ``output_tokens`` holds every generated token, reasoning included, and
``reasoning_tokens`` only says how many of them were reasoning. Anthropic
(``output_tokens_details.thinking_tokens``) and OpenAI
(``completion_tokens_details.reasoning_tokens``) report them inside their output count, so their
adapters copy that count as it is; a provider that reports them apart from the answer's tokens
(Gemini's ``thoughts_token_count`` beside ``candidates_token_count``) has its adapter add them
into ``output_tokens``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from scriptorium.llm.model import ModelPrice, Usage

__all__ = [
    "BATCH_DIVISOR",
    "CACHE_MULTIPLIERS",
    "PRICE_TABLE",
    "PRICE_TABLE_DATE",
    "PRICE_TABLE_SOURCE",
    "ModelPrice",
    "builtin_prices",
    "cost_micro",
    "derived_cache_price",
    "gateway_cost_micro",
    "price_for",
    "usd_price",
]

if TYPE_CHECKING:
    #: The built-in table: model name -> price, merged from the built-in providers' specs.
    PRICE_TABLE: Mapping[str, ModelPrice]

PRICE_TABLE_DATE = "2026-11"
PRICE_TABLE_SOURCE = (
    "the providers' public pricing pages: https://platform.claude.com/docs/en/about-claude/pricing "
    "and https://openai.com/api/pricing/ (standard tier, halved for provider batches; long-context and data-residency "
    "surcharges not modelled)"
)

_MICRO = 1_000_000

#: Batch APIs (Anthropic Message Batches, OpenAI Batch) charge half the standard price.
BATCH_DIVISOR = 2


#: Cache prices as multiples of the input price (Anthropic's published rates), in integer
#: (numerator, denominator) form so derived prices stay exact: 5-minute cache write 1.25x,
#: 1-hour cache write 2x, cache read 0.1x.
CACHE_MULTIPLIERS = {"cache_write": (5, 4), "cache_write_1h": (2, 1), "cache_read": (1, 10)}


def derived_cache_price(input_price: int, name: str) -> int:
    """The ``name`` cache price derived from ``input_price`` (micro-USD/Mtok), rounded half up."""
    numerator, denominator = CACHE_MULTIPLIERS[name]
    return (input_price * numerator * 2 + denominator) // (denominator * 2)


def usd_price(input: str, output: str, cache_write: str, cache_read: str) -> ModelPrice:
    """A price from USD-per-Mtok strings, converted exactly (strings, so no float rounding)."""
    values = [int(Decimal(v) * _MICRO) for v in (input, output, cache_write, cache_read)]
    return ModelPrice(*values)


_merged: Mapping[str, ModelPrice] | None = None


def builtin_prices() -> Mapping[str, ModelPrice]:
    """The price tables of the built-in providers' specs, merged (model names do not overlap)."""
    global _merged
    if _merged is None:
        from scriptorium.llm.registry import BUILTIN, Registry

        # The built-ins only, whatever plugins are installed: no process-wide registry needed.
        registry = Registry(entry_points=False)
        merged: dict[str, ModelPrice] = {}
        for name in BUILTIN:
            spec = registry.find(name)
            if spec is not None:
                merged.update(spec.prices)
        _merged = MappingProxyType(merged)
    return _merged


def __getattr__(name: str) -> Any:
    # The merged built-in table, built on first access from each provider's spec.
    if name == "PRICE_TABLE":
        return builtin_prices()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Snapshot suffixes that name a dated version of a listed model: -20250929, -2024-08-06, -latest,
# and Vertex's @20250929.
_DATED_SUFFIX = re.compile(r"(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-latest|@\d{8})$")


def price_for(model: str, prices: Mapping[str, ModelPrice] | None = None) -> ModelPrice | None:
    """The price of ``model`` in ``prices`` (default: the built-in table): an exact match, else
    the name without its dated suffix."""
    table = builtin_prices() if prices is None else prices
    name = model.strip().lower()
    found = table.get(name)
    if found is None:
        found = table.get(_DATED_SUFFIX.sub("", name))
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


def _from_override(override: Mapping[str, float | None], table: ModelPrice | None) -> ModelPrice:
    """A price from a profile's ``pricing``. A missing (or null) cache price is derived from the
    input price with the standard multipliers (:data:`CACHE_MULTIPLIERS`); a missing input or
    output price (the profile model requires both) falls back to the table, else 0."""
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
        return explicit if explicit is not None else derived_cache_price(input_price, name)

    return ModelPrice(
        input_price,
        output_price,
        cached("cache_write"),
        cached("cache_read"),
        cached("cache_write_1h"),
    )


def cost_micro(
    model: str,
    usage: Usage,
    override: Mapping[str, float | None] | None = None,
    *,
    batch: bool = False,
    prices: Mapping[str, ModelPrice] | None = None,
) -> tuple[int, str | None]:
    """The cost of ``usage`` on ``model`` in integer micro-USD, and a note when there is no price.

    ``override`` (a profile's ``pricing``, USD per million tokens) wins over the table. An unknown
    model costs 0 and the note says so; the adapter puts it in ``metadata["pricing"]``.
    ``batch=True`` prices at the providers' batch rate, half of every token class, halved before
    the one rounding so half of an odd total is not rounded twice. ``prices`` is the table to
    look ``model`` up in (a provider's own; default: the built-in table).
    """
    table = price_for(model, prices)
    if override:
        price = _from_override(override, table)
    elif table is not None:
        price = table
    else:
        return 0, f"unknown model {model!r}: cost 0 (no price in the {PRICE_TABLE_DATE} table)"
    # 1-hour cache writes are part of cache_creation_input_tokens, priced at their own rate.
    one_hour = min(usage.cache_write_1h_input_tokens, usage.cache_creation_input_tokens)
    one_hour_price = price.cache_write_1h
    if one_hour_price is None:
        one_hour_price = derived_cache_price(price.input, "cache_write_1h")
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + (usage.cache_creation_input_tokens - one_hour) * price.cache_write
        + one_hour * one_hour_price
        + usage.cache_read_input_tokens * price.cache_read
    )
    divisor = _MICRO * BATCH_DIVISOR if batch else _MICRO
    return (total + divisor // 2) // divisor, None


def gateway_cost_micro(metadata: Mapping[str, Any] | None) -> int:
    """The cost a gateway reported for an answer (its ``metadata["gateway_cost"]["usd"]``, kept as
    reported beside scriptorium's own ``cost_micro``), in micro-USD rounded half up; 0 when none
    was reported or it is not a finite non-negative number. Totals (batch summaries, test
    reports) add it up apart from ``cost_micro``: the one figure for a model alias scriptorium
    cannot price."""
    reported = metadata.get("gateway_cost") if isinstance(metadata, Mapping) else None
    usd = reported.get("usd") if isinstance(reported, Mapping) else None
    if isinstance(usd, bool) or not isinstance(usd, int | float) or not math.isfinite(usd):
        return 0
    if usd < 0:
        return 0
    return int((Decimal(repr(usd)) * 1_000_000).quantize(Decimal(1), rounding=ROUND_HALF_UP))
