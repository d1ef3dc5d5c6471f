"""Rendered prompts: the messages a provider receives."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["CachePoint", "Message", "RenderedPrompt"]


class Message(BaseModel):
    """One conversation turn."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    role: Literal["user", "assistant"]
    content: str


class CachePoint(BaseModel):
    """Where a cached prefix ends: after ``offset`` characters of the system text
    (``message is None``) or of message number ``message``; ``offset`` None means the end of the
    system text including anything the adapter appends to it. Not part of any hash."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    message: int | None = None
    offset: int | None = None
    ttl: Literal["5m", "1h"] = "5m"


class RenderedPrompt(BaseModel):
    """The system prompt and messages after rendering, plus the rendered session id."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    system: str | None = None
    messages: tuple[Message, ...] = ()
    session_id: str | None = None
    #: Cache breakpoints (``cache: static`` / ``explicit`` prompts), in prompt order.
    cache_points: tuple[CachePoint, ...] = ()

    def hash_form(self) -> dict[str, Any]:
        """``{"system", "messages"}`` as hashed for ``rendered_prompt_hash``."""
        return {
            "system": self.system,
            "messages": [{"role": m.role, "content": m.content} for m in self.messages],
        }
