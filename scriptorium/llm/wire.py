"""What a provider's adapter puts on the wire that the request alone does not say, as ``prepare``
shows it: each provider's spec has a ``wire_view`` (its package's ``body.wire_view``). This module
keeps the provider-free lookups and, for one release, the provider functions that lived here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scriptorium.llm.model import LLMRequest
from scriptorium.llm.registry import WireView, default_registry
from scriptorium.profile.model import ExecutionSettings

if TYPE_CHECKING:
    from scriptorium.llm.anthropic.body import wire_view as anthropic_view
    from scriptorium.llm.openai.body import openai_strategy, openai_system
    from scriptorium.llm.openai.body import wire_view as openai_view

__all__ = [
    "WireView",
    "anthropic_view",
    "append_system",
    "ignored_settings",
    "openai_strategy",
    "openai_system",
    "openai_view",
    "wire_view",
]


def ignored_settings(provider: str, settings: ExecutionSettings) -> tuple[str, ...]:
    """The settings that have a value but that ``provider``'s adapter does not send."""
    spec = default_registry().find(provider)
    return () if spec is None else spec.ignored(settings)


def append_system(system: str | None, text: str) -> str:
    """``text`` appended to the system prompt as its own paragraph."""
    return f"{system}\n\n{text}" if system else text


def wire_view(request: LLMRequest) -> WireView:
    """The system text sent, the structured-output strategy used (None when unknown or not
    structured) and the settings left out, for ``request``'s provider (its spec's wire view)."""
    spec = default_registry().find(request.target.provider)
    if spec is None:
        return WireView(request.system, None, ())
    return spec.wire_view(request)


def __getattr__(name: str) -> Any:
    # Kept for one release: the provider functions now live in the provider packages, and which
    # settings each built-in provider leaves out in its spec.
    if name == "anthropic_view":
        from scriptorium.llm.anthropic.body import wire_view as anthropic

        return anthropic
    if name in ("openai_view", "openai_strategy", "openai_system"):
        import scriptorium.llm.openai.body as openai

        return getattr(openai, "wire_view" if name == "openai_view" else name)
    if name == "IGNORED_SETTINGS":
        registry = default_registry()
        return {
            n: spec.ignored_settings
            for n in registry.names()
            if (spec := registry.find(n)) is not None and spec.ignored_settings
        }
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
