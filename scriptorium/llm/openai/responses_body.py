"""The Responses API request body, built from an :class:`LLMRequest` by pure functions (the
flavour ``options.api`` chooses, :mod:`.apis`).

What Chat Completions and the Responses API share is decided once, in :mod:`.body`: the
structured-output strategy, the system text (schema instructions for ``prompt``), the native
output form (:func:`~scriptorium.llm.openai.body.output_format`), the reasoning plan and the
prompt cache key. What differs is where it goes:

- the system text is ``instructions``; the messages are ``input`` (text as ``input_text``, or a
  plain string when a message is only text; an image as ``input_image`` with a data URL; a PDF as
  ``input_file`` with its name and a data URL);
- ``max_output_tokens``; no ``stop`` (the API has none: ``stop_sequences`` is ignored, and
  ``prepare`` says so);
- the native form is ``text.format``; ``tool`` is one forced function (``tools`` and
  ``tool_choice``, flat as this API takes them);
- reasoning is ``reasoning: {effort, summary: "auto"}``, so the model's summary comes back;
- ``store: false`` always: nothing of a request or its answer is kept on OpenAI's side.
"""

from __future__ import annotations

from typing import Any

from scriptorium.artifact.media import PDF_TYPE
from scriptorium.llm.media.wire import (
    Encoder,
    MediaWire,
    b64_text,
    content_blocks,
    data_url,
)
from scriptorium.llm.model import LLMRequest
from scriptorium.llm.openai.api import IGNORED_SETTINGS, PROVIDER
from scriptorium.llm.openai.body import (
    openai_strategy,
    openai_system,
    output_format,
    request_reasoning,
    sampling_params,
    tool_name,
)
from scriptorium.llm.openai.cache import cache_params
from scriptorium.llm.openai.schema import strict_schema
from scriptorium.llm.reasoning import ReasoningPlan
from scriptorium.llm.registry import WireView
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import MediaPart, Message, TextPart

__all__ = [
    "IGNORED_ON_RESPONSES",
    "build_responses_params",
    "responses_ignored",
    "responses_input",
    "responses_reasoning",
    "responses_wire_view",
]

#: Settings the Responses API does not take, besides Chat Completions' (it has no ``stop``).
IGNORED_ON_RESPONSES: tuple[str, ...] = (*IGNORED_SETTINGS, "stop_sequences")


def responses_reasoning(request: LLMRequest) -> ReasoningPlan | None:
    """The reasoning plan as the Responses API takes it: the effort Chat Completions would send
    as ``reasoning_effort``, as ``reasoning.effort`` with a summary asked for."""
    plan = request_reasoning(request)
    if plan is None:
        return None
    ignored = dict(plan.ignored)
    if "reasoning_budget_tokens" in ignored:
        ignored["reasoning_budget_tokens"] = (
            "the Responses API takes a reasoning.effort level, not a token budget"
        )
    if "reasoning_effort" not in plan.sent:
        return plan.model_copy(update={"ignored": ignored})
    effort = plan.sent["reasoning_effort"]
    sent: dict[str, Any] = {"effort": effort}
    if effort != "none":
        sent["summary"] = "auto"
    return plan.model_copy(update={"sent": {"reasoning": sent}, "ignored": ignored})


def responses_ignored(
    settings: ExecutionSettings, plan: ReasoningPlan | None = None
) -> tuple[str, ...]:
    """The settings with a value the Responses API does not take (never sent; said in
    metadata), the reasoning settings ``plan`` leaves out included."""
    ignored = tuple(n for n in IGNORED_ON_RESPONSES if getattr(settings, n) not in (None, ()))
    return ignored if plan is None else (*ignored, *plan.ignored_settings)


def _content(message: Message, media: Any, encode: Encoder) -> str | list[dict[str, Any]]:
    content = message.content
    if not isinstance(content, str) and all(isinstance(p, TextPart) for p in content):
        return "".join(part.text for part in content if isinstance(part, TextPart))
    return content_blocks(
        content, media, PROVIDER, encode, text_type="input_text", medium=_media_part
    )


def _media_part(part: MediaPart, media_type: str, data: str) -> dict[str, Any]:
    url = data_url(media_type, data)
    if media_type == PDF_TYPE:
        return {"type": "input_file", "filename": part.name, "file_data": url}
    return {"type": "input_image", "image_url": url, "detail": "auto"}


def responses_input(request: LLMRequest, encode: Encoder = b64_text) -> list[dict[str, Any]]:
    """The request's messages as the Responses API's ``input`` items."""
    return [
        {"role": m.role, "content": _content(m, request.media, encode)} for m in request.messages
    ]


def build_responses_params(
    request: LLMRequest, *, media_wire: MediaWire | None = None
) -> tuple[dict[str, Any], str | None]:
    """The Responses API body for ``request`` and the structured strategy used (see the
    module)."""
    settings = request.settings
    params: dict[str, Any] = {"model": request.target.model, "store": False}
    params["max_output_tokens"] = settings.max_tokens
    params.update(sampling_params(settings))
    plan = responses_reasoning(request)
    if plan is not None:
        params.update(plan.sent)
    structured = request.structured_output
    strategy = openai_strategy(structured)
    system = openai_system(request, strategy)
    if system:
        params["instructions"] = system
    if structured is not None and strategy == "tool":
        name = tool_name(structured)
        params["tools"] = [
            {
                "type": "function",
                "name": name,
                "description": "Return the output.",
                "parameters": strict_schema(structured.schema_),
                "strict": True,
            }
        ]
        params["tool_choice"] = {"type": "function", "name": name}
    elif structured is not None and strategy != "prompt":
        params["text"] = {"format": output_format(request, structured)}
    encode = b64_text if media_wire is None else media_wire.encode
    params["input"] = responses_input(request, encode)
    params.update(cache_params(request))
    return params, strategy


def responses_wire_view(request: LLMRequest) -> WireView:
    """What ``prepare`` shows as sent on the Responses API (the same functions as the body)."""
    strategy = openai_strategy(request.structured_output)
    plan = responses_reasoning(request)
    return WireView(
        openai_system(request, strategy),
        strategy,
        responses_ignored(request.settings, plan),
        reasoning=plan,
        api="responses",
    )
