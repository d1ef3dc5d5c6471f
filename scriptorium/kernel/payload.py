"""The init payload: a raw generation or a prompt run, told apart by their fields.

A payload naming any prompt-run field (``prompt_id``, ``profile``, ``inputs``, ``artifacts``,
``overrides``, ``root``) is a prompt run; any other payload is raw. ``metadata``, ``reasoning``
(a level, ``off`` .. ``max``) and ``reasoning_budget_tokens`` belong to both: for a prompt run they
are overrides (stating them in ``overrides`` as well is refused). Unknown fields are refused: a
misspelt ``max_token`` should fail loudly, not be ignored.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from scriptorium._nulls import absent_when_null
from scriptorium.artifact.model import ArtifactContent
from scriptorium.errors import InvalidRequestError, translate
from scriptorium.profile.model import Reasoning

__all__ = ["PromptPayload", "RawPayload", "parse_payload"]

_RAW_ONLY = frozenset({"model", "system", "user", "max_tokens", "temperature"})
_PROMPT_ONLY = frozenset({"prompt_id", "profile", "inputs", "artifacts", "overrides", "root"})


class RawPayload(BaseModel):
    """One message to one model: ``model`` and ``user`` are required."""

    # strict: JSON gives exact types, so "5" for max_tokens or true for a number is a mistake.
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, protected_namespaces=())

    model: str = Field(min_length=1, max_length=200)
    system: str | None = None
    user: str = Field(min_length=1)
    max_tokens: int = Field(default=1024, ge=1, le=1_000_000)
    #: ``null`` leaves the provider's default.
    temperature: float | None = Field(default=0.7, ge=0.0, le=2.0)
    #: How much the model thinks (absent: the provider's default), as ``settings.reasoning``.
    reasoning: Reasoning = None
    reasoning_budget_tokens: int | None = Field(default=None, ge=0, le=1_000_000)
    metadata: dict[str, Any] = Field(default_factory=dict)


class PromptPayload(BaseModel):
    """A prompt definition run through the Engine over ``root`` (default: the working directory)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_id: str
    profile: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    #: A reference (path under ``root``) or the content: ``{"text": ...}`` / ``{"base64": ...}``.
    artifacts: dict[str, str | ArtifactContent] = Field(default_factory=dict)
    #: Checked as ``Overrides`` when the run is built (importing the use case costs ~0.1 s that a
    #: raw payload should not pay).
    overrides: dict[str, Any] = Field(default_factory=dict)
    root: str | None = None
    #: Overrides of ``settings.reasoning`` / ``settings.reasoning_budget_tokens``, said once.
    reasoning: Reasoning = None
    reasoning_budget_tokens: int | None = Field(default=None, ge=0, le=1_000_000)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _nulls_are_absent(cls, data: Any) -> Any:
        # As in RunRequest: null for an optional field means "not given".
        return absent_when_null(data, ("inputs", "artifacts", "overrides", "metadata"))

    def all_overrides(self) -> dict[str, Any]:
        """``overrides`` with the top-level reasoning fields added; ``InvalidRequestError`` when
        both places state one."""
        merged = dict(self.overrides)
        for name in ("reasoning", "reasoning_budget_tokens"):
            value = getattr(self, name)
            if value is None:
                continue
            if merged.get(name) is not None:
                raise InvalidRequestError(
                    f"payload states {name} both at the top level and in overrides: say it once",
                    field=name,
                )
            merged[name] = value
        return merged


def parse_payload(payload: dict[str, Any]) -> RawPayload | PromptPayload:
    """The payload as a :class:`RawPayload` or :class:`PromptPayload`; ``InvalidRequestError``
    (naming the field) when a required field is missing or any field is wrong."""
    fields = set(payload)
    if fields & _PROMPT_ONLY:
        if fields & _RAW_ONLY:
            mixed = ", ".join(sorted(fields & _RAW_ONLY))
            raise InvalidRequestError(
                f"payload mixes prompt-run and raw fields ({mixed})", field="payload"
            )
        if not isinstance(payload.get("prompt_id"), str) or not payload["prompt_id"]:
            raise InvalidRequestError(
                "prompt-run payload needs a non-empty string 'prompt_id'", field="prompt_id"
            )
        with translate(InvalidRequestError, "invalid prompt-run payload", field="payload"):
            return PromptPayload.model_validate(payload)
    for name in ("model", "user"):
        value = payload.get(name)
        if not isinstance(value, str) or not value:
            raise InvalidRequestError(
                f"raw payload needs a non-empty string {name!r} (or 'prompt_id' for a prompt run)",
                field=name,
            )
    with translate(InvalidRequestError, "invalid raw payload", field="payload"):
        return RawPayload.model_validate(payload)
