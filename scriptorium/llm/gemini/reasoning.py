"""How the reasoning settings reach Gemini's models: the dated capability table and the one
mapping to ``generationConfig.thinkingConfig``.

Gemini models think in one of two ways (table of 2026-11, from Google's thinking guide and model
pages):

- the 2.5 models take a ``thinkingBudget`` in tokens, each within its own range: 2.5 Pro 128 to
  32,768 and cannot stop thinking; 2.5 Flash 0 to 24,576 (0 turns thinking off); 2.5 Flash-Lite
  512 to 24,576, or 0 (its default: it does not think unless asked);
- the 3 models take a ``thinkingLevel``: 3 Pro ``low`` or ``high``; 3 Flash ``minimal``, ``low``,
  ``medium`` or ``high``. Neither stops thinking entirely;
- the 2.0 models do not think and take no ``thinkingConfig``.

:func:`reasoning_plan` maps a level onto what the model takes: on a budget model ``low``,
``medium`` and ``high`` are 1,024, 8,192 and 24,576 tokens (``xhigh`` and ``max`` the model's
most), kept inside the model's range; ``off`` is a budget of 0 where the model allows it, else
its least, and ``prepare`` says so. ``reasoning_budget_tokens`` wins over the level on a budget
model, and must be below ``max_tokens`` (Gemini counts thinking inside the output budget). On a
level model the level goes to the nearest one it takes, and a token budget is left out.
``includeThoughts`` is sent whenever the model thinks, so the thought summaries come back as
``output.reasoning``. A model the table does not know gets a level as ``thinkingLevel`` and a
budget as ``thinkingBudget``, as asked: the API's answer decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from scriptorium.llm.reasoning import (
    NOTHING,
    ReasoningPlan,
    check_budget,
    find_model,
    nearest,
    rank,
)
from scriptorium.profile.model import ExecutionSettings, ReasoningLevel

__all__ = ["REASONING_TABLE", "REASONING_TABLE_DATE", "Thinking", "reasoning_plan"]

REASONING_TABLE_DATE = "2026-11"

#: What a level asks for on a budget model, before the model's range is applied.
_LEVEL_BUDGET: Mapping[ReasoningLevel, int] = MappingProxyType(
    {"low": 1024, "medium": 8192, "high": 24_576}
)
#: Gemini's thinking levels in rising order, and where scriptorium's stand among them.
_LEVELS = ("minimal", "low", "medium", "high")
_ON_SCALE: Mapping[ReasoningLevel, str] = MappingProxyType(
    {
        "off": "minimal",
        "low": "low",
        "medium": "medium",
        "high": "high",
        "xhigh": "high",
        "max": "high",
    }
)


@dataclass(frozen=True)
class Thinking:
    """How one model thinks: a budget range (``least``/``most``; ``can_stop``: whether 0 turns
    it off), or the ``levels`` it takes; neither: it does not think."""

    least: int = 0
    most: int = 0
    can_stop: bool = False
    levels: tuple[str, ...] = ()

    @property
    def budgeted(self) -> bool:
        return self.most > 0

    @property
    def thinks(self) -> bool:
        return self.budgeted or bool(self.levels)


_NONE = Thinking()

#: Model name -> how it thinks.
REASONING_TABLE: Mapping[str, Thinking] = MappingProxyType(
    {
        "gemini-3-pro": Thinking(levels=("low", "high")),
        "gemini-3-pro-preview": Thinking(levels=("low", "high")),
        "gemini-3-flash": Thinking(levels=_LEVELS),
        "gemini-3-flash-preview": Thinking(levels=_LEVELS),
        "gemini-2.5-pro": Thinking(least=128, most=32_768),
        "gemini-2.5-flash": Thinking(least=0, most=24_576, can_stop=True),
        "gemini-2.5-flash-lite": Thinking(least=512, most=24_576, can_stop=True),
        "gemini-2.0-flash": _NONE,
        "gemini-2.0-flash-lite": _NONE,
        "gemini-1.5-pro": _NONE,
        "gemini-1.5-flash": _NONE,
    }
)


def _config(**members: Any) -> dict[str, Any]:
    return {"thinkingConfig": members}


def reasoning_plan(model: str, settings: ExecutionSettings) -> ReasoningPlan:
    """How ``settings``' reasoning goes to ``model`` as ``thinkingConfig`` (see the module doc).
    Raises ``InvalidRequestError`` for a budget not below ``max_tokens``."""
    level, budget = settings.reasoning, settings.reasoning_budget_tokens
    if level is None and budget is None:
        return NOTHING
    found = find_model(model, REASONING_TABLE)
    name = model or "the model"
    if found is None:
        return _unknown(level, budget)
    matched, thinking = found
    ignored: dict[str, str] = {}
    if not thinking.thinks:
        reason = f"{name} does not think (it takes no thinkingConfig)"
        if level is not None:
            ignored["reasoning"] = reason
        if budget is not None:
            ignored["reasoning_budget_tokens"] = reason
        return ReasoningPlan(level=level, ignored=ignored, matched=matched)
    if thinking.budgeted:
        return _budgeted(name, matched, thinking, level, budget, settings)
    if budget is not None:
        ignored["reasoning_budget_tokens"] = f"{name} takes a thinkingLevel, not a token budget"
    if level is None:
        return ReasoningPlan(ignored=ignored, matched=matched)
    asked = _ON_SCALE[level]
    taken = [(rank(t, _LEVELS), t) for t in thinking.levels]
    chosen = asked if asked in thinking.levels else nearest(rank(asked, _LEVELS), taken)
    notes: tuple[str, ...] = ()
    if level == "off" or chosen != level:
        notes = (
            f"reasoning {level!r} sent as thinkingLevel {chosen!r}: {name} takes "
            f"{', '.join(thinking.levels)}" + (" and always thinks" if level == "off" else ""),
        )
    return ReasoningPlan(
        level=level,
        sent=_config(thinkingLevel=chosen, includeThoughts=True),
        thinking=True,
        ignored=ignored,
        notes=notes,
        matched=matched,
    )


def _budgeted(
    name: str,
    matched: str,
    thinking: Thinking,
    level: ReasoningLevel | None,
    budget: int | None,
    settings: ExecutionSettings,
) -> ReasoningPlan:
    notes: list[str] = []
    if budget is None:
        assert level is not None
        if level == "off":
            if thinking.can_stop:
                return ReasoningPlan(level=level, sent=_config(thinkingBudget=0), matched=matched)
            wanted = thinking.least
            notes.append(
                f"reasoning 'off' sent as thinkingBudget {wanted}: {name} cannot stop thinking"
            )
        else:
            wanted = _LEVEL_BUDGET.get(level, thinking.most)
        chosen = min(max(wanted, thinking.least), thinking.most)
        if chosen != wanted and not notes:
            notes.append(
                f"reasoning {level!r} sent as thinkingBudget {chosen}: {name} takes "
                f"{thinking.least} to {thinking.most}"
            )
        # A budget derived from a level is kept below max_tokens rather than refused.
        if chosen >= settings.max_tokens:
            capped = max(thinking.least, settings.max_tokens - 1)
            if capped >= settings.max_tokens:
                check_budget(chosen, settings, model=name, derived_from=level, minimum=1)
            notes.append(
                f"thinkingBudget {chosen} lowered to {capped} to stay below max_tokens "
                f"({settings.max_tokens})"
            )
            chosen = capped
        return ReasoningPlan(
            level=level,
            sent=_config(thinkingBudget=chosen, includeThoughts=True),
            thinking=True,
            notes=tuple(notes),
            matched=matched,
        )
    if budget == 0 and thinking.can_stop:
        return ReasoningPlan(level=level, sent=_config(thinkingBudget=0), matched=matched)
    check_budget(budget, settings, model=name, derived_from=None, minimum=max(1, thinking.least))
    if budget > thinking.most:
        notes.append(f"reasoning_budget_tokens {budget} sent as {thinking.most}: {name}'s most")
        budget = thinking.most
    ignored: dict[str, str] = {}
    if level is not None:
        ignored["reasoning"] = "reasoning_budget_tokens sets the thinking budget"
    return ReasoningPlan(
        level=level,
        sent=_config(thinkingBudget=budget, includeThoughts=True),
        thinking=True,
        ignored=ignored,
        notes=tuple(notes),
        matched=matched,
    )


def _unknown(level: ReasoningLevel | None, budget: int | None) -> ReasoningPlan:
    """A model the table does not know: what was asked, as asked."""
    if budget is not None:
        members: dict[str, Any] = {"thinkingBudget": budget}
        if budget:
            members["includeThoughts"] = True
        ignored = {"reasoning": "reasoning_budget_tokens sets the thinking budget"} if level else {}
        return ReasoningPlan(
            level=level, sent=_config(**members), thinking=budget != 0, ignored=ignored
        )
    assert level is not None
    if level == "off":
        return ReasoningPlan(level=level, sent=_config(thinkingBudget=0))
    chosen = _ON_SCALE[level]
    return ReasoningPlan(
        level=level, sent=_config(thinkingLevel=chosen, includeThoughts=True), thinking=True
    )
