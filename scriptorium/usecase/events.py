"""The events of a streamed run, discriminated by ``type``.

A stream says :class:`AttemptStarted` before each generation (``initial``, then one per repair),
:class:`ReasoningDelta` for each piece of the model's reasoning (when the provider returns it,
before the text it leads to), :class:`TextDelta` for each piece of text as it arrives,
:class:`PartialValue` whenever the JSON value readable so far changed (``json`` / ``json_schema``
outputs, read from the answer text only), and :class:`Done` with the :class:`RunResult` last.
After ``AttemptStarted(kind="repair")`` the earlier text and partial values are superseded: a
consumer drops them and starts over with the repair's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from scriptorium.usecase.model import RunResult

__all__ = [
    "AttemptStarted",
    "Done",
    "PartialValue",
    "ReasoningDelta",
    "StreamEvent",
    "TextDelta",
]


class TextDelta(BaseModel):
    """A piece of the output text of generation ``attempt`` (1 = initial, 2.. = repairs), in order:
    an attempt's deltas add up to its text."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    type: Literal["text_delta"] = "text_delta"
    text: str
    attempt: int = Field(ge=1)


class ReasoningDelta(BaseModel):
    """A piece of generation ``attempt``'s reasoning (the provider's thinking text or its
    summary), in order: an attempt's reasoning deltas add up to its ``reasoning``, never to its
    text, and no partial value is read from them."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    type: Literal["reasoning_delta"] = "reasoning_delta"
    text: str
    attempt: int = Field(ge=1)


class PartialValue(BaseModel):
    """The JSON value readable from attempt ``attempt``'s text so far; sent only when it changed.

    Only complete pieces count (a string or number still being written is left out), so each
    partial value grows the one before; the last one of a valid run is ``validation.value``.
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    type: Literal["partial_value"] = "partial_value"
    value: Any
    attempt: int = Field(ge=1)


class AttemptStarted(BaseModel):
    """Generation ``attempt`` begins: ``initial`` (attempt 1), or a ``repair`` of the one before."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    type: Literal["attempt_started"] = "attempt_started"
    attempt: int = Field(ge=1)
    kind: Literal["initial", "repair"]


class Done(BaseModel):
    """The run is over; ``result`` is what ``run`` returns for the same responses."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    type: Literal["done"] = "done"
    result: RunResult


#: Any stream event (``pydantic.TypeAdapter(StreamEvent)`` reads one back from its JSON form).
StreamEvent = Annotated[
    TextDelta | ReasoningDelta | PartialValue | AttemptStarted | Done, Field(discriminator="type")
]
