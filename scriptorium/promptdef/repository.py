"""The port through which the use case reads prompt definitions."""

from __future__ import annotations

from typing import Protocol

from scriptorium.promptdef.model import PromptDefinition

__all__ = ["Repository"]


class Repository(Protocol):
    """Where prompt definitions come from.

    ``get`` raises ``PromptLoadError`` for a missing or invalid definition and
    ``InvalidRequestError`` for a malformed id (before touching any storage).
    """

    def get(self, prompt_id: str) -> PromptDefinition:
        """The definition with this id."""
        ...

    def list(self) -> list[str]:
        """Every prompt id, sorted."""
        ...
