"""The ``generateContent`` request body, built from an :class:`LLMRequest` by pure functions.

No SDK import and no I/O: :func:`build_body` gives the JSON body (the REST form, camelCase) the
adapter posts through the SDK, and what it chose (strategy, dropped schema keywords, reasoning
plan). :func:`wire_view` is what ``prepare`` shows as sent, from the same functions, so the two
cannot drift.

- The system section is ``systemInstruction``; ``user`` and ``assistant`` messages are ``user``
  and ``model`` contents. Text is ``{"text"}``; an image or a PDF is an ``inlineData`` part
  (``mimeType`` and base64 ``data``).
- Settings go to ``generationConfig``: ``maxOutputTokens``, ``temperature``, ``topP``, ``topK``,
  ``stopSequences``; the reasoning plan adds ``thinkingConfig``.
- Structured output: ``native`` (and ``auto``) -> ``responseMimeType: application/json`` with
  ``responseJsonSchema`` (the schema reduced, :mod:`.schema`); ``tool`` -> one function
  declaration (``parametersJsonSchema``) the model must call (``toolConfig`` mode ``ANY``), its
  arguments the output; ``prompt`` -> the schema in the system instruction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scriptorium.artifact.media import base_type
from scriptorium.llm.gemini.api import IGNORED_SETTINGS, PROVIDER
from scriptorium.llm.gemini.reasoning import reasoning_plan
from scriptorium.llm.gemini.schema import gemini_strategy, reduce_schema_cached
from scriptorium.llm.media.wire import b64_text, part_bytes
from scriptorium.llm.model import LLMRequest, StructuredOutput
from scriptorium.llm.reasoning import ReasoningPlan, asked
from scriptorium.llm.registry import WireView
from scriptorium.llm.structured import prompt_instructions
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message, TextPart

__all__ = [
    "ROLES",
    "Built",
    "build_body",
    "gemini_contents",
    "gemini_system",
    "ignored_settings",
    "request_reasoning",
    "tool_name",
    "wire_view",
]

#: scriptorium's message roles as Gemini's content roles.
ROLES = {"user": "user", "assistant": "model"}


@dataclass(frozen=True)
class Built:
    """A built body and what was chosen for it."""

    body: dict[str, Any]
    strategy: str | None
    dropped: tuple[str, ...] = ()
    plan: ReasoningPlan | None = None


def gemini_system(request: LLMRequest, strategy: str | None) -> str | None:
    """The system instruction sent for ``strategy`` (the schema instructions for ``prompt``)."""
    system = request.system
    structured = request.structured_output
    if structured is None or strategy != "prompt":
        return system
    instruction = prompt_instructions(structured)
    return f"{system}\n\n{instruction}" if system else instruction


def _parts(message: Message, media: Mapping[str, bytes]) -> list[dict[str, Any]]:
    content = message.content
    if isinstance(content, str):
        return [{"text": content}]
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            parts.append({"text": part.text})
            continue
        data = b64_text(part, part_bytes(part, media, PROVIDER))
        parts.append({"inlineData": {"mimeType": base_type(part.media_type), "data": data}})
    return parts


def gemini_contents(request: LLMRequest) -> list[dict[str, Any]]:
    """The request's messages as Gemini ``contents`` (the system section is not among them)."""
    return [
        {"role": ROLES.get(m.role, "user"), "parts": _parts(m, request.media)}
        for m in request.messages
    ]


def request_reasoning(request: LLMRequest) -> ReasoningPlan | None:
    """How ``request``'s reasoning settings are sent (None: it gives none)."""
    settings = request.settings
    return reasoning_plan(request.target.model, settings) if asked(settings) else None


def ignored_settings(
    settings: ExecutionSettings, plan: ReasoningPlan | None = None
) -> tuple[str, ...]:
    """The settings with a value that are not sent (the reasoning ones ``plan`` leaves out)."""
    ignored = tuple(n for n in IGNORED_SETTINGS if getattr(settings, n) is not None)
    return ignored if plan is None else (*ignored, *plan.ignored_settings)


def tool_name(structured: StructuredOutput) -> str:
    """The function name the ``tool`` strategy declares (letters, digits, ``_``, ``.``, ``-``;
    starting with a letter or ``_``; at most 64 characters)."""
    name = "".join(c if c.isalnum() or c in "_.-" else "_" for c in structured.name)[:64]
    return name if name and (name[0].isalpha() or name[0] == "_") else f"_{name}"[:64]


def _tool_members(structured: StructuredOutput) -> tuple[dict[str, Any], tuple[str, ...]]:
    schema = structured.schema_
    assert isinstance(schema, dict)
    reduced, lost = reduce_schema_cached(schema)
    name = tool_name(structured)
    declaration = {
        "name": name,
        "description": "Return the output.",
        "parametersJsonSchema": reduced,
    }
    members = {
        "tools": [{"functionDeclarations": [declaration]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [name]}},
    }
    return members, tuple(lost)


def _generation_config(
    request: LLMRequest, strategy: str | None, plan: ReasoningPlan | None
) -> tuple[dict[str, Any], tuple[str, ...]]:
    settings = request.settings
    config: dict[str, Any] = {"maxOutputTokens": settings.max_tokens}
    if settings.temperature is not None:
        config["temperature"] = settings.temperature
    if settings.top_p is not None:
        config["topP"] = settings.top_p
    if settings.top_k is not None:
        config["topK"] = settings.top_k
    if settings.stop_sequences:
        config["stopSequences"] = list(settings.stop_sequences)
    dropped: tuple[str, ...] = ()
    structured = request.structured_output
    if structured is not None and strategy == "native":
        config["responseMimeType"] = "application/json"
        schema = structured.schema_
        if structured.format == "json_schema" and isinstance(schema, dict):
            reduced, lost = reduce_schema_cached(schema)
            config["responseJsonSchema"] = reduced
            dropped = tuple(lost)
    if plan is not None:
        config.update(plan.sent)
    return config, dropped


def build_body(request: LLMRequest) -> Built:
    """The ``generateContent`` body for ``request`` and what was chosen for it."""
    strategy = gemini_strategy(request.structured_output)
    plan = request_reasoning(request)
    config, dropped = _generation_config(request, strategy, plan)
    body: dict[str, Any] = {"contents": gemini_contents(request), "generationConfig": config}
    structured = request.structured_output
    if structured is not None and strategy == "tool":
        members, dropped = _tool_members(structured)
        body.update(members)
    system = gemini_system(request, strategy)
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    return Built(body, strategy, dropped, plan)


def wire_view(request: LLMRequest) -> WireView:
    """What the adapter sends for ``request`` that the request alone does not say."""
    strategy = gemini_strategy(request.structured_output)
    plan = request_reasoning(request)
    dropped: tuple[str, ...] = ()
    structured = request.structured_output
    if (
        structured is not None
        and strategy in ("native", "tool")
        and structured.format == "json_schema"
        and isinstance(structured.schema_, dict)
    ):
        dropped = tuple(reduce_schema_cached(structured.schema_)[1])
    return WireView(
        gemini_system(request, strategy),
        strategy,
        ignored_settings(request.settings, plan),
        dropped,
        reasoning=plan,
    )
