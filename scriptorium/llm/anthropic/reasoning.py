"""How the reasoning settings reach Claude: the dated capability table and the one mapping.

Three generations of thinking controls live side by side (table of 2026-11, from Anthropic's
model and thinking documentation):

- adaptive thinking: ``thinking: {"type": "adaptive"}`` plus ``output_config.effort``. Opus 4.7
  and 4.8 take only this form (a ``budget_tokens`` is a 400) and every effort from ``low`` to
  ``max``; Opus 4.6 and Sonnet 4.6 take it too (their budget form is deprecated), without
  ``xhigh``;
- a thinking budget: ``thinking: {"type": "enabled", "budget_tokens": N}`` with N at least 1024
  and below ``max_tokens``: Opus 4.5 and older thinking models, Sonnet 4.5 and 4, Sonnet 3.7,
  Haiku 4.5;
- no thinking at all: Haiku 3.5 and 3.

:func:`reasoning_plan` maps ``(model, settings)`` to what is sent: ``off`` sends no thinking (and,
on adaptive models, the lowest effort); a level an adaptive model does not take goes down to the
nearest one it does (never more than asked), and ``prepare`` says so; on a budget model the
budget is ``reasoning_budget_tokens``, else derived from the level (:data:`LEVEL_BUDGETS`). A
model the table does not know gets the newest form as asked (a budget when one is given), and
the API's answer decides.

Thinking cannot be combined with a forced tool (``tool_choice`` of type ``tool``): the body's
strategy choice takes ``plan.thinking`` into account (``auto`` picks ``native`` or ``prompt``) and
an explicit ``tool`` strategy with thinking on is refused at ``prepare``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from scriptorium.llm.reasoning import (
    NOTHING,
    ReasoningLevel,
    ReasoningPlan,
    check_budget,
    find_model,
    nearest,
    rank,
)
from scriptorium.profile.model import ExecutionSettings

__all__ = [
    "LEVEL_BUDGETS",
    "MIN_BUDGET",
    "REASONING_TABLE",
    "REASONING_TABLE_DATE",
    "Thinking",
    "reasoning_plan",
]

REASONING_TABLE_DATE = "2026-11"

#: The smallest thinking budget the API takes.
MIN_BUDGET = 1024

#: The budget a level stands for on a model that takes only a budget (``off`` sends none).
LEVEL_BUDGETS: Mapping[ReasoningLevel, int] = MappingProxyType(
    {"low": 1024, "medium": 4096, "high": 16384, "xhigh": 24576, "max": 32768}
)


@dataclass(frozen=True, slots=True)
class Thinking:
    """What one model takes: ``adaptive`` thinking with these ``efforts`` (rising order), or a
    ``budget``, or (neither) no thinking at all."""

    adaptive: bool = False
    efforts: tuple[ReasoningLevel, ...] = ()
    budget: bool = False


_ADAPTIVE_ALL = Thinking(adaptive=True, efforts=("low", "medium", "high", "xhigh", "max"))
_ADAPTIVE_46 = Thinking(adaptive=True, efforts=("low", "medium", "high", "max"))
_BUDGET = Thinking(budget=True)
_NONE = Thinking()

#: Model name (as :func:`~scriptorium.llm.reasoning.find_model` reads it) -> what it takes.
REASONING_TABLE: Mapping[str, Thinking] = MappingProxyType(
    {
        "claude-opus-4-8": _ADAPTIVE_ALL,
        "claude-opus-4-7": _ADAPTIVE_ALL,
        "claude-opus-4-6": _ADAPTIVE_46,
        "claude-sonnet-4-6": _ADAPTIVE_46,
        "claude-opus-4-5": _BUDGET,
        "claude-opus-4-1": _BUDGET,
        "claude-opus-4-0": _BUDGET,
        "claude-opus-4": _BUDGET,
        "claude-sonnet-4-5": _BUDGET,
        "claude-sonnet-4-0": _BUDGET,
        "claude-sonnet-4": _BUDGET,
        "claude-3-7-sonnet": _BUDGET,
        "claude-haiku-4-5": _BUDGET,
        "claude-3-5-haiku": _NONE,
        "claude-3-haiku": _NONE,
    }
)


def reasoning_plan(model: str, settings: ExecutionSettings) -> ReasoningPlan:
    """How ``settings``' reasoning goes to ``model`` (see the module doc). Raises
    ``InvalidRequestError`` for a budget under 1024 or not below ``max_tokens``."""
    level, budget = settings.reasoning, settings.reasoning_budget_tokens
    if level is None and budget is None:
        return NOTHING
    found = find_model(model, REASONING_TABLE, prefix="claude-")
    name = model or "the model"
    if found is None:
        # Not in the table: the newest form as asked (a budget when one is given).
        if level == "off":
            return _off(level, budget, None)
        if budget is not None:
            return _budget(settings, budget, None, name, None)
        return _adaptive(level, None, _UNKNOWN_EFFORTS, None, name)
    matched, takes = found
    if not takes.adaptive and not takes.budget:
        why = f"{name} does not think (no extended thinking)"
        return ReasoningPlan(
            level=level, ignored=_reasons(level, budget, why, why), matched=matched
        )
    if level == "off":
        return _off(level, budget, matched, takes.efforts[0] if takes.adaptive else None)
    if takes.adaptive:
        return _adaptive(level, budget, takes.efforts, matched, name)
    if budget is not None:
        return _budget(settings, budget, None, name, matched)
    assert level is not None  # budget is None here, and not both are
    return _budget(settings, LEVEL_BUDGETS[level], level, name, matched)


#: What a model the table does not know is sent: the level as asked.
_UNKNOWN_EFFORTS: tuple[ReasoningLevel, ...] = ("low", "medium", "high", "xhigh", "max")


def _reasons(
    level: ReasoningLevel | None, budget: int | None, level_why: str, budget_why: str
) -> dict[str, str]:
    """The reasons for the settings that were given."""
    reasons = {}
    if level is not None:
        reasons["reasoning"] = level_why
    if budget is not None:
        reasons["reasoning_budget_tokens"] = budget_why
    return reasons


def _off(
    level: ReasoningLevel, budget: int | None, matched: str | None, lowest: str | None = None
) -> ReasoningPlan:
    """No thinking; on an adaptive model the lowest effort as well."""
    sent = {} if lowest is None else {"output_config": {"effort": lowest}}
    ignored = {} if budget is None else {"reasoning_budget_tokens": "reasoning is off"}
    return ReasoningPlan(level=level, sent=sent, ignored=ignored, matched=matched)


def _adaptive(
    level: ReasoningLevel | None,
    budget: int | None,
    efforts: tuple[ReasoningLevel, ...],
    matched: str | None,
    name: str,
) -> ReasoningPlan:
    """Adaptive thinking at the level's effort, or the nearest one below it the model takes."""
    ignored = {}
    if budget is not None:
        ignored["reasoning_budget_tokens"] = (
            f"{name} thinks adaptively and takes no token budget: the level sets its effort"
        )
    if level is None:  # a budget alone says nothing an adaptive model takes
        return ReasoningPlan(ignored=ignored, matched=matched)
    effort = level
    notes: tuple[str, ...] = ()
    if level not in efforts:
        effort = nearest(rank(level), [(rank(e), e) for e in efforts])
        notes = (
            f"reasoning {level!r} sent as effort {effort!r}: {name} takes {', '.join(efforts)}",
        )
    return ReasoningPlan(
        level=level,
        sent={"thinking": {"type": "adaptive"}, "output_config": {"effort": effort}},
        thinking=True,
        ignored=ignored,
        notes=notes,
        matched=matched,
    )


def _budget(
    settings: ExecutionSettings,
    budget: int,
    derived_from: ReasoningLevel | None,
    name: str,
    matched: str | None,
) -> ReasoningPlan:
    """Thinking with a token budget: the one given, or the one ``derived_from`` stands for."""
    check_budget(budget, settings, model=name, derived_from=derived_from, minimum=MIN_BUDGET)
    notes: tuple[str, ...] = ()
    if derived_from is not None:
        notes = (
            f"reasoning {derived_from!r} sent as a thinking budget of {budget} tokens "
            f"({name} takes a budget, not a level)",
        )
    return ReasoningPlan(
        level=settings.reasoning,
        sent={"thinking": {"type": "enabled", "budget_tokens": budget}},
        thinking=True,
        notes=notes,
        matched=matched,
    )
