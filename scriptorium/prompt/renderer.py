"""The port through which the use case renders a definition into messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from scriptorium.artifact.model import Artifact
from scriptorium.prompt.model import RenderedPrompt
from scriptorium.promptdef.model import PromptDefinition

__all__ = ["Renderer"]


class Renderer(Protocol):
    """Renders each role section of a definition on its own, and its session id template.

    Raises ``PromptRenderError`` for anything that goes wrong (syntax, undefined variables, sandbox
    violations, size bounds). ``cache_key`` (the definition hash) lets compiled templates be reused.
    """

    def render(
        self,
        definition: PromptDefinition,
        *,
        inputs: Mapping[str, Any],
        artifacts: Mapping[str, Artifact],
        cache_key: str | None = None,
    ) -> RenderedPrompt:
        """The rendered prompt."""
        ...
