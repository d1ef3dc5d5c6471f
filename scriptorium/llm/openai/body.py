"""The Chat Completions request parameters, built from an :class:`LLMRequest` by pure functions.

No SDK import and no I/O: :func:`build_params` gives the body the adapter encodes and posts, and
the structured-output strategy used. :func:`wire_view` is what ``prepare`` shows as sent, from the
same functions (:func:`openai_strategy`, :func:`openai_system`), so the two cannot drift.

Strategies: ``native`` (and ``auto``) -> ``response_format`` (``json_schema``, strict when the
schema reduces; ``json_object`` for the ``json`` format); ``tool`` -> one forced function whose
arguments are the output; ``prompt`` -> the schema in the system prompt. ``top_k`` is never sent.

Messages become content parts here (:func:`openai_content`): text -> ``{"type": "text", "text"}``;
an image -> ``{"type": "image_url", "image_url": {"url": "data:<type>;base64,<data>"}}``; a PDF ->
``{"type": "file", "file": {"filename": <artifact name>, "file_data":
"data:application/pdf;base64,<data>"}}``. A text-only message stays a plain string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from scriptorium.artifact.media import PDF_TYPE
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.media.wire import (
    Encoder,
    MediaWire,
    b64_text,
    content_blocks,
    data_url,
)
from scriptorium.llm.model import LLMRequest, StructuredOutput
from scriptorium.llm.openai.api import IGNORED_SETTINGS, PROVIDER, is_openai_endpoint
from scriptorium.llm.openai.azure import is_azure
from scriptorium.llm.openai.cache import cache_params
from scriptorium.llm.openai.reasoning import reasoning_plan
from scriptorium.llm.openai.schema import strict_schema
from scriptorium.llm.openai.servers import server_of
from scriptorium.llm.reasoning import ReasoningPlan, asked
from scriptorium.llm.registry import WireView
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import MediaPart, Message, content_text

__all__ = [
    "build_params",
    "ignored_settings",
    "openai_content",
    "openai_messages",
    "openai_strategy",
    "openai_system",
    "output_format",
    "request_reasoning",
    "sampling_params",
    "tool_name",
    "wire_view",
]


def tool_name(structured: StructuredOutput) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", structured.name)[:64]
    return name or "output"


def _max_tokens_field(request: LLMRequest) -> str:
    """``max_completion_tokens`` for api.openai.com (its reasoning models reject ``max_tokens``),
    ``max_tokens`` for other endpoints (what every compatible server understands); a profile may
    choose with ``options.max_tokens_field``."""
    chosen = request.options.get("max_tokens_field")
    if chosen in ("max_tokens", "max_completion_tokens"):
        return str(chosen)
    if chosen is not None:  # a typo must not silently send the other name
        raise LLMGenerateError(
            "openai: options.max_tokens_field must be 'max_tokens' or 'max_completion_tokens'",
            reason="config",
            provider=PROVIDER,
            model=request.target.model,
        )
    # Azure serves OpenAI's own models, and takes what api.openai.com takes.
    own = is_openai_endpoint(request.target.endpoint) or is_azure(request.options)
    return "max_completion_tokens" if own else "max_tokens"


def build_params(
    request: LLMRequest, *, media_wire: MediaWire | None = None
) -> tuple[dict[str, Any], str | None]:
    """The Chat Completions parameters for ``request`` and the structured strategy used.

    ``top_k`` is not sent: OpenAI has no such parameter and rejects unknown ones. Strategies:
    ``native`` (and ``auto``) -> ``response_format`` (``json_schema``, strict when the schema
    reduces; ``json_object`` for the ``json`` format); ``tool`` -> one forced function whose
    arguments are the output; ``prompt`` -> the schema in the system prompt.
    """
    settings: ExecutionSettings = request.settings
    params: dict[str, Any] = {"model": request.target.model}
    params[_max_tokens_field(request)] = settings.max_tokens
    params.update(sampling_params(settings))
    if settings.stop_sequences:
        params["stop"] = list(settings.stop_sequences)
    plan = request_reasoning(request)
    if plan is not None:
        params.update(plan.sent)

    structured = request.structured_output
    # The strategy and the system text are the ones prepare shows (wire_view).
    strategy = openai_strategy(structured)
    system = openai_system(request, strategy)
    if structured is not None:
        schema = structured.schema_
        if strategy == "tool":
            name = tool_name(structured)
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": "Return the output.",
                        "parameters": strict_schema(schema),
                        "strict": True,
                    },
                }
            ]
            params["tool_choice"] = {"type": "function", "function": {"name": name}}
        elif strategy != "prompt":
            form = output_format(request, structured)
            if form["type"] == "json_schema":
                nested = {k: form[k] for k in ("name", "schema", "strict")}
                params["response_format"] = {"type": "json_schema", "json_schema": nested}
            else:
                params["response_format"] = form

    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system})
    encode = b64_text if media_wire is None else media_wire.encode
    messages.extend(openai_messages(request, encode))
    params["messages"] = messages
    params.update(cache_params(request))
    return params, strategy


def sampling_params(settings: ExecutionSettings) -> dict[str, Any]:
    """``temperature`` and ``top_p`` where they have a value, as both APIs take them."""
    params: dict[str, Any] = {}
    if settings.temperature is not None:
        params["temperature"] = settings.temperature
    if settings.top_p is not None:
        params["top_p"] = settings.top_p
    return params


def output_format(request: LLMRequest, structured: StructuredOutput) -> dict[str, Any]:
    """The native structured-output form, flat (``{"type": "json_schema", "name", "schema",
    "strict"}`` or ``{"type": "json_object"}``): Chat Completions nests it in ``response_format``,
    the Responses API puts it in ``text.format``. A schema goes strict when it reduces to what
    strict mode accepts; a local server (``options.server``) gets what its row of the table says
    (vLLM: strict and the whole schema; LM Studio: a permissive schema instead of JSON mode)."""
    schema = structured.schema_
    server = None if is_openai_endpoint(request.target.endpoint) else server_of(request.options)
    if structured.format != "json_schema" or not isinstance(schema, dict):
        if server is not None and "json_object" not in server.forms:
            # Any JSON value fits the empty schema: JSON mode, said the way this server takes it.
            return {"type": "json_schema", "name": "json", "schema": {}, "strict": False}
        return {"type": "json_object"}
    name = tool_name(structured)
    if server is not None and server.strict_always:
        return {"type": "json_schema", "name": name, "schema": schema, "strict": True}
    reduced = strict_schema(schema)
    chosen = reduced if reduced is not None else schema
    return {"type": "json_schema", "name": name, "schema": chosen, "strict": reduced is not None}


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
        return _append(system, instruction)
    if strategy == "native" and not has_schema and not _mentions_json(system, request):
        # JSON mode refuses prompts that never say "JSON"; say it rather than fail with a 400.
        return _append(system, "Respond in JSON.")
    return system


def openai_content(
    message: Message, media: Mapping[str, bytes], encode: Encoder = b64_text
) -> str | list[dict[str, Any]]:
    """One message's ``content`` for Chat Completions."""
    return content_blocks(
        message.content, media, PROVIDER, encode, text_type="text", medium=_media_part
    )


def _media_part(part: MediaPart, media_type: str, data: str) -> dict[str, Any]:
    url = data_url(media_type, data)
    if media_type == PDF_TYPE:
        return {"type": "file", "file": {"filename": part.name, "file_data": url}}
    return {"type": "image_url", "image_url": {"url": url}}


def openai_messages(request: LLMRequest, encode: Encoder = b64_text) -> list[dict[str, Any]]:
    """The request's messages for Chat Completions (the system message is the caller's)."""
    return [
        {"role": m.role, "content": openai_content(m, request.media, encode)}
        for m in request.messages
    ]


def _append(system: str | None, text: str) -> str:
    """``text`` appended to the system prompt as its own paragraph."""
    return f"{system}\n\n{text}" if system else text


def request_reasoning(request: LLMRequest) -> ReasoningPlan | None:
    """How ``request``'s reasoning settings are sent (None: it gives none)."""
    settings = request.settings
    return reasoning_plan(request.target.model, settings) if asked(settings) else None


def ignored_settings(
    settings: ExecutionSettings, plan: ReasoningPlan | None = None
) -> tuple[str, ...]:
    """The settings with a value that the API does not take (never sent; said in metadata),
    the reasoning settings ``plan`` leaves out included."""
    ignored = tuple(n for n in IGNORED_SETTINGS if getattr(settings, n) is not None)
    return ignored if plan is None else (*ignored, *plan.ignored_settings)


def wire_view(request: LLMRequest) -> WireView:
    """What the adapter sends for ``request`` that the request alone does not say: the system
    text, the strategy, the settings left out, and the reasoning plan (the one the body sends)."""
    strategy = openai_strategy(request.structured_output)
    plan = request_reasoning(request)
    return WireView(
        openai_system(request, strategy),
        strategy,
        ignored_settings(request.settings, plan),
        reasoning=plan,
        api="chat",
    )
