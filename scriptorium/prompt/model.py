"""Rendered prompts: the messages a provider receives."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["Message", "RenderedPrompt"]


class Message(BaseModel):
    """One conversation turn."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    role: Literal["user", "assistant"]
    content: str


class RenderedPrompt(BaseModel):
    """The system prompt and messages after rendering, plus the rendered session id."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    system: str | None = None
    messages: tuple[Message, ...] = ()
    session_id: str | None = None

    def hash_form(self) -> dict[str, Any]:
        """``{"system", "messages"}`` as hashed for ``rendered_prompt_hash``."""
        return {
            "system": self.system,
            "messages": [{"role": m.role, "content": m.content} for m in self.messages],
        }
