"""Reasoning (thinking) controls at the LLM boundary: what every provider's mapping shares.

``settings.reasoning`` (``off`` .. ``max``) and ``settings.reasoning_budget_tokens`` are the same
for every provider; what a model takes is not (an effort level, a thinking token budget, nothing).
Each provider's spec has one function, ``(model, settings) -> ReasoningPlan``, reading its own
dated capability table: the body members to send, the settings it leaves out and why, and how a
level it does not take was moved to the nearest one. The body builder sends ``plan.sent`` and
``prepare`` shows the same plan, so what ``prepare`` shows is what is sent.

This module holds the plan type and the pieces those functions share: the nearest-level rule,
the table lookup by model name, and the budget checks. No SDK, no provider names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from scriptorium.errors import InvalidRequestError
from scriptorium.profile.model import REASONING_LEVELS, ExecutionSettings, ReasoningLevel

__all__ = [
    "NOTHING",
    "REASONING_LEVELS",
    "ReasoningLevel",
    "ReasoningPlan",
    "asked",
    "check_budget",
    "find_model",
    "nearest",
    "rank",
]

T = TypeVar("T")


class ReasoningPlan(BaseModel):
    """How one request's reasoning settings go to one provider's model, as ``prepare`` shows it
    and the body carries it."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    #: The level asked (``settings.reasoning``), None when not given.
    level: ReasoningLevel | None = None
    #: The body members sent for it, exactly as they go out (``{}``: nothing is sent).
    sent: dict[str, Any] = Field(default_factory=dict)
    #: Whether the model thinks with this request (Anthropic cannot force a tool while it does).
    thinking: bool = False
    #: Reasoning settings given but not sent, each with why.
    ignored: dict[str, str] = Field(default_factory=dict)
    #: How a level the model does not take as asked was sent instead.
    notes: tuple[str, ...] = ()
    #: The capability table entry that decided (None: a model the table does not know, which
    #: gets the level as asked and the provider's answer decides).
    matched: str | None = None

    @property
    def ignored_settings(self) -> tuple[str, ...]:
        """The names of the settings left out, in settings order."""
        return tuple(n for n in ("reasoning", "reasoning_budget_tokens") if n in self.ignored)


#: The plan of a request that gives no reasoning setting: nothing sent, the provider's default.
NOTHING = ReasoningPlan()


def asked(settings: ExecutionSettings) -> bool:
    """Whether ``settings`` give any reasoning setting (else the provider's default stands)."""
    return settings.reasoning is not None or settings.reasoning_budget_tokens is not None


def rank(level: str, scale: Sequence[str] = REASONING_LEVELS) -> int:
    """Where ``level`` stands on ``scale`` (rising order)."""
    return scale.index(level)


def nearest(asked: int, available: Sequence[tuple[int, T]]) -> T:
    """Of ``available`` (rank, value) pairs, the value with the highest rank not above ``asked``
    (never more than was asked); the lowest one when every rank is above it."""
    below = [pair for pair in available if pair[0] <= asked]
    chosen = max(below, key=lambda p: p[0]) if below else min(available, key=lambda p: p[0])
    return chosen[1]


# What may follow a table entry's name in a model id: a dated snapshot, a platform's suffix.
_BOUNDARY = frozenset("-@:")
# ...but not another version number: `claude-opus-4-9` is not `claude-opus-4`.
_OTHER_VERSION = re.compile(r"-\d{1,2}(?:\D|$)")


def find_model(model: str, table: Mapping[str, T], *, prefix: str = "") -> tuple[str, T] | None:
    """The entry of ``table`` for ``model``: the longest key the name starts with, followed by
    nothing, a dated snapshot or a platform's suffix (``claude-sonnet-4-5-20250929``,
    ``gpt-5-mini-2025-08-07``, ``claude-opus-4-6@20260205``), never by another version number;
    with ``prefix``, the name is read from where ``prefix`` first appears in it (a cloud
    platform's id such as ``us.anthropic.claude-sonnet-4-5-v1:0``). None when no key fits."""
    name = model.strip().lower()
    if prefix:
        at = name.find(prefix)
        if at < 0:
            return None
        name = name[at:]
    best: str | None = None
    for key in table:
        if not name.startswith(key) or (best is not None and len(key) <= len(best)):
            continue
        rest = name[len(key) :]
        if not rest or (rest[0] in _BOUNDARY and not _OTHER_VERSION.match(rest)):
            best = key
    return None if best is None else (best, table[best])


def check_budget(
    budget: int, settings: ExecutionSettings, *, model: str, derived_from: str | None, minimum: int
) -> None:
    """A thinking budget must be at least ``minimum`` and below ``max_tokens`` (thinking is part
    of the output): ``InvalidRequestError`` naming both sides otherwise. ``derived_from`` is the
    level the budget was derived from (None: ``reasoning_budget_tokens`` gave it)."""
    source = (
        "settings.reasoning_budget_tokens"
        if derived_from is None
        else f"settings.reasoning {derived_from!r} (a thinking budget of {budget} tokens)"
    )
    if budget < minimum:
        raise InvalidRequestError(
            f"{source} is below the {minimum} tokens {model} takes as a thinking budget",
            field="reasoning_budget_tokens",
        )
    if budget >= settings.max_tokens:
        hint = (
            "raise max_tokens or lower the budget"
            if derived_from is None
            else "raise max_tokens, or set reasoning_budget_tokens below it"
        )
        raise InvalidRequestError(
            f"{source} is not below settings.max_tokens ({settings.max_tokens}): on {model} "
            f"thinking is part of the output, so {hint}",
            field="reasoning_budget_tokens" if derived_from is None else "reasoning",
        )
