"""The README's caching figures are what the price table and the bundled prompt give."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from scriptorium import Engine
from scriptorium.llm.model import Usage
from scriptorium.llm.pricing import PRICE_TABLE_DATE, cost_micro

REPO = Path(__file__).resolve().parents[2]
TICKET = {"ticket": "We were charged for 40 seats but only have 25 users."}


def test_the_caching_table_is_computed_from_the_price_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    engine = Engine(REPO)
    total = engine.count_tokens("support/triage", inputs=TICKET).input_tokens
    system = engine.prepare("support/triage", inputs=TICKET).system
    assert system is not None
    prefix = math.ceil(len(system) / 4)
    rest = total - prefix
    runs = 100
    model = "claude-sonnet-4-6"
    without = cost_micro(model, Usage(input_tokens=runs * total))[0]
    cached = cost_micro(
        model,
        Usage(
            input_tokens=runs * rest,
            cache_creation_input_tokens=prefix,
            cache_read_input_tokens=(runs - 1) * prefix,
        ),
    )[0]
    saved = round(100 * (1 - cached / without))
    for figure in (
        f"about {prefix:,} tokens of guidelines",
        f"about {rest} more per ticket",
        f"price table of {PRICE_TABLE_DATE}",
        f"{runs * total:,} at $3.00/M",
        f"{without:,} micro-USD",
        f"{prefix:,} written at $3.75/M, {(runs - 1) * prefix:,} read at $0.30/M",
        f"{runs * rest:,} at $3.00/M",
        f"{cached:,} micro-USD",
        f"{saved}% less",
    ):
        assert figure in readme, figure
