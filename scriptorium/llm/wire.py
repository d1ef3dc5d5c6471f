"""What each provider adapter puts on the wire that the request alone does not say: the settings it
leaves out and the system text it sends (a structured-output strategy may append instructions).

Pure functions keyed by provider name, with no SDK import, so that ``prepare`` can show exactly
what a run would send without calling anything, and the adapters build their requests from the
same functions (one source of truth: what ``prepare`` shows cannot drift from what is sent).
A provider this module does not know (``fake``, ``replay``, a registered adapter) is taken to send
the rendered system text and every setting.
"""

from __future__ import annotations

import json
from typing import Any

from scriptorium.llm.anthropic_body import output_blocks
from scriptorium.llm.model import LLMRequest, StructuredOutput
from scriptorium.llm.openai_schema import strict_schema
from scriptorium.llm.registry import WireView, default_registry
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import content_text

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


def __getattr__(name: str) -> Any:
    # Kept for one release: which settings each built-in provider leaves out (now its spec's).
    if name == "IGNORED_SETTINGS":
        registry = default_registry()
        return {
            n: spec.ignored_settings
            for n in registry.names()
            if (spec := registry.find(n)) is not None and spec.ignored_settings
        }
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def append_system(system: str | None, text: str) -> str:
    """``text`` appended to the system prompt as its own paragraph."""
    return f"{system}\n\n{text}" if system else text


def _schema_text(schema: Any) -> str:
    return json.dumps(schema, ensure_ascii=False, indent=None)


def openai_strategy(structured: StructuredOutput | None) -> str | None:
    """The strategy the OpenAI adapter uses: ``auto`` is ``native``; ``tool`` needs an object
    schema that can be made strict (function parameters), else it falls back to ``native``."""
    if structured is None:
        return None
    strategy = "native" if structured.strategy == "auto" else structured.strategy
    has_schema = structured.format == "json_schema" and isinstance(structured.schema_, dict)
    if strategy == "tool" and not (has_schema and strict_schema(structured.schema_) is not None):
        return "native"
    return strategy


def _mentions_json(system: str | None, request: LLMRequest) -> bool:
    texts = [system or "", *(content_text(m.content) for m in request.messages)]
    return any("json" in t.lower() for t in texts)


def openai_system(request: LLMRequest, strategy: str | None) -> str | None:
    """The system text the OpenAI adapter sends for ``strategy``: the schema instructions for
    ``prompt``; for JSON mode (no schema) a note saying JSON, which the API requires somewhere."""
    system = request.system
    structured = request.structured_output
    if structured is None or strategy is None:
        return system
    has_schema = structured.format == "json_schema" and isinstance(structured.schema_, dict)
    if strategy == "prompt":
        instruction = (
            "Respond with only a JSON value that conforms to this JSON Schema, "
            f"and no other text:\n{_schema_text(structured.schema_)}"
            if has_schema
            else "Respond with only a JSON value, and no other text."
        )
        return append_system(system, instruction)
    if strategy == "native" and not has_schema and not _mentions_json(system, request):
        # JSON mode refuses prompts that never say "JSON"; say it rather than fail with a 400.
        return append_system(system, "Respond in JSON.")
    return system


def _anthropic_system(request: LLMRequest) -> tuple[str | None, str | None]:
    # The same (memoised) blocks the adapter's body is built from.
    spec = request.structured_output
    if spec is None:
        return request.system, None
    blocks = output_blocks(spec, request.target.model)
    if blocks.instructions:
        return append_system(request.system, blocks.instructions), blocks.strategy
    return request.system, blocks.strategy


def anthropic_view(request: LLMRequest) -> WireView:
    """What the Anthropic adapter sends for ``request``."""
    system, strategy = _anthropic_system(request)
    return WireView(system, strategy, ignored_settings("anthropic", request.settings))


def openai_view(request: LLMRequest) -> WireView:
    """What the OpenAI adapter sends for ``request``."""
    strategy = openai_strategy(request.structured_output)
    return WireView(
        openai_system(request, strategy), strategy, ignored_settings("openai", request.settings)
    )


def wire_view(request: LLMRequest) -> WireView:
    """The system text sent, the structured-output strategy used (None when unknown or not
    structured) and the settings left out, for ``request``'s provider (its spec's wire view)."""
    spec = default_registry().find(request.target.provider)
    if spec is None:
        return WireView(request.system, None, ())
    return spec.wire_view(request)
