"""How the reasoning settings reach OpenAI's models: the dated capability table and the one
mapping to Chat Completions' ``reasoning_effort``.

OpenAI's effort scale runs ``none``, ``minimal``, ``low``, ``medium``, ``high``, ``xhigh``, ``max``;
each reasoning model takes part of it (table of 2026-11, from OpenAI's reasoning guide and model
pages): the o-series ``low`` to ``high``; GPT-5 ``minimal`` to ``high``; GPT-5.1 ``none`` to
``high``; GPT-5.2 ``none`` to ``xhigh``; the pro models only their top levels. GPT-4o, GPT-4.1
and the chat snapshots do not reason and take no ``reasoning_effort``.

:func:`reasoning_plan` maps a level onto that scale (``off`` is ``none``): the model's own level
when it takes it, else the nearest one below (a level above its highest goes to its highest;
``off`` on a model that always reasons goes to its lowest), and ``prepare`` says so. A model the
table does not know (a newer one, or any model of an OpenAI-compatible server) gets the level as
asked, and the server's answer decides. ``reasoning_budget_tokens`` is never sent: Chat
Completions takes levels, not a budget.

A model of the table that reasons takes no ``temperature`` or ``top_p`` other than 1 while it does
(OpenAI answers 400): a request that gives both a level it would reason at and one of those fails
closed at prepare, naming both settings, before anything is sent. A model the table does not know
is not judged (an OpenAI-compatible server may take both).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from scriptorium.errors import InvalidRequestError
from scriptorium.llm.reasoning import NOTHING, ReasoningPlan, find_model, nearest, rank
from scriptorium.profile.model import ExecutionSettings, ReasoningLevel

__all__ = ["EFFORTS", "REASONING_TABLE", "REASONING_TABLE_DATE", "reasoning_plan"]

REASONING_TABLE_DATE = "2026-11"

Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
#: OpenAI's effort scale, in rising order.
EFFORTS: tuple[Effort, ...] = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
#: Where each of scriptorium's levels stands on that scale.
_ON_SCALE: Mapping[ReasoningLevel, Effort] = MappingProxyType(
    {
        "off": "none",
        "low": "low",
        "medium": "medium",
        "high": "high",
        "xhigh": "xhigh",
        "max": "max",
    }
)

_O_SERIES: tuple[Effort, ...] = ("low", "medium", "high")
_GPT_5: tuple[Effort, ...] = ("minimal", "low", "medium", "high")
_GPT_51: tuple[Effort, ...] = ("none", "low", "medium", "high")
_GPT_52: tuple[Effort, ...] = ("none", "low", "medium", "high", "xhigh")

#: Model name -> the efforts it takes (empty: it does not reason).
REASONING_TABLE: Mapping[str, tuple[Effort, ...]] = MappingProxyType(
    {
        "o1": _O_SERIES,
        "o1-pro": _O_SERIES,
        "o1-mini": (),
        "o3": _O_SERIES,
        "o3-pro": _O_SERIES,
        "o3-mini": _O_SERIES,
        "o4-mini": _O_SERIES,
        "gpt-5": _GPT_5,
        "gpt-5-mini": _GPT_5,
        "gpt-5-nano": _GPT_5,
        "gpt-5-codex": _O_SERIES,
        "gpt-5-pro": ("high",),
        "gpt-5-chat-latest": (),
        "gpt-5.1": _GPT_51,
        "gpt-5.1-codex": _O_SERIES,
        "gpt-5.1-codex-mini": _O_SERIES,
        "gpt-5.1-codex-max": ("low", "medium", "high", "xhigh"),
        "gpt-5.1-chat-latest": ("medium",),
        "gpt-5.2": _GPT_52,
        "gpt-5.2-codex": ("low", "medium", "high", "xhigh"),
        "gpt-5.2-pro": ("medium", "high", "xhigh"),
        "gpt-5.2-chat-latest": ("medium",),
        "gpt-4.1": (),
        "gpt-4.1-mini": (),
        "gpt-4.1-nano": (),
        "gpt-4o": (),
        "gpt-4o-mini": (),
    }
)


def reasoning_plan(model: str, settings: ExecutionSettings) -> ReasoningPlan:
    """How ``settings``' reasoning goes to ``model`` as ``reasoning_effort`` (see the module
    doc). ``InvalidRequestError`` for a sampling setting the reasoning model refuses."""
    level, budget = settings.reasoning, settings.reasoning_budget_tokens
    if level is None and budget is None:
        return NOTHING
    found = find_model(model, REASONING_TABLE)
    matched, efforts = (None, EFFORTS) if found is None else found
    name = model or "the model"
    ignored: dict[str, str] = {}
    if budget is not None:
        ignored["reasoning_budget_tokens"] = (
            "Chat Completions takes a reasoning_effort level, not a token budget"
        )
    if level is None:
        return ReasoningPlan(ignored=ignored, matched=matched)
    if not efforts:
        ignored["reasoning"] = f"{name} does not reason (it takes no reasoning_effort)"
        return ReasoningPlan(level=level, ignored=ignored, matched=matched)
    asked = _ON_SCALE[level]
    effort = asked if asked in efforts else nearest(rank(asked, EFFORTS), _ranked(efforts))
    notes: tuple[str, ...] = ()
    if effort != asked:
        notes = (
            f"reasoning {level!r} sent as reasoning_effort {effort!r}: {name} takes "
            f"{', '.join(efforts)}",
        )
    if matched is not None and effort != "none":
        _refuse_sampling(settings, level, effort, name)
    return ReasoningPlan(
        level=level,
        sent={"reasoning_effort": effort},
        thinking=effort != "none",
        ignored=ignored,
        notes=notes,
        matched=matched,
    )


def _refuse_sampling(settings: ExecutionSettings, level: str, effort: str, name: str) -> None:
    for field in ("temperature", "top_p"):
        value = getattr(settings, field)
        if value is not None and value != 1:
            raise InvalidRequestError(
                f"settings.reasoning {level!r} and settings.{field} {value} conflict: {name} "
                f"takes no {field} but 1 while it reasons (reasoning_effort {effort!r}); leave "
                f"{field} out, or set reasoning: off where the model can stop reasoning",
                field=f"settings.{field}",
            )


def _ranked(efforts: tuple[Effort, ...]) -> list[tuple[int, Effort]]:
    return [(rank(e, EFFORTS), e) for e in efforts]
