"""The Messages API request body, built from an :class:`LLMRequest` by pure functions.

No SDK import and no I/O: :func:`build_body` turns a request into the JSON object the adapter
posts to ``/v1/messages``, plus what reading the answer needs (the strategy used, the tool name,
whether the tool input wraps the value). The adapter sends that dict with the SDK's lower-level
``post``, so the SDK keeps auth, base URL, headers, timeouts and its error types while its typed
parameter layer is skipped. :func:`wire_view` is what ``prepare`` shows as sent, from the same
blocks, so the two cannot drift.

Messages become content blocks here (:func:`anthropic_content`): text -> ``{"type": "text",
"text"}``; an image -> ``{"type": "image", "source": {"type": "base64", "media_type", "data"}}``;
a PDF -> ``{"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
"data"}, "title": <artifact name>}``. A text-only message stays a plain string. Blocks are built
fresh per request as plain dicts, so prompt caching can mark one without touching shared state.

What does not depend on the request itself (the strategy for a model, the ``output_config`` or
tool block, the prompt instructions) is computed once per structured-output spec object and
model: the runner hands out the same frozen spec for an unchanged prompt, so a run reuses the
blocks of the previous one. Shared blocks are read-only; code that adds to the body (media blocks,
cache directives) builds new dicts rather than changing them.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scriptorium.artifact.media import PDF_TYPE
from scriptorium.errors import InvalidRequestError
from scriptorium.llm.anthropic.api import (
    COUNT_TOKENS_PATH,
    IGNORED_SETTINGS,
    MESSAGES_PATH,
    PROVIDER,
)
from scriptorium.llm.anthropic.cache import apply_cache
from scriptorium.llm.anthropic.reasoning import reasoning_plan
from scriptorium.llm.anthropic.schema import (
    Strategy,
    choose_strategy,
    reduce_schema_cached,
    tool_name,
)
from scriptorium.llm.media.wire import (
    Encoder,
    b64_text,
    content_blocks,
)
from scriptorium.llm.model import LLMRequest, StructuredOutput
from scriptorium.llm.reasoning import ReasoningPlan, asked
from scriptorium.llm.registry import WireView
from scriptorium.llm.sdk_http import encode_body
from scriptorium.llm.structured import prompt_instructions
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import MediaPart, Message

__all__ = [
    "COUNT_TOKENS_PATH",
    "MESSAGES_PATH",
    "MessagesBody",
    "OutputBlocks",
    "anthropic_content",
    "anthropic_messages",
    "build_body",
    "count_tokens_body",
    "encode_body",
    "message_params",
    "output_blocks",
    "request_reasoning",
    "wire_view",
]

# The members of a Messages body that the token-counting endpoint takes.
_COUNTED = ("model", "system", "messages", "tools", "tool_choice", "thinking")

_TOOL_DESCRIPTION = "Record the answer in the required structure."


@dataclass(frozen=True, slots=True)
class OutputBlocks:
    """How one structured-output spec is asked of one model: the strategy, and the body members
    and system text it adds. Shared between requests: read-only."""

    strategy: Strategy
    #: Members added to the body as they are (``output_config``, or ``tools`` + ``tool_choice``).
    members: tuple[tuple[str, Any], ...] = ()
    #: Text appended to the system prompt (``prompt`` strategy).
    instructions: str = ""
    tool: str | None = None
    #: The tool's input wraps a non-object root schema under ``"value"``.
    wrapped: bool = False
    #: Schema keywords the API does not accept, left out of what is sent.
    dropped: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MessagesBody:
    """One request's body for ``POST /v1/messages`` and what reading its answer needs."""

    body: dict[str, Any]
    output: OutputBlocks | None = None
    #: Settings the request gives but the API does not take (said in the response metadata).
    ignored: tuple[str, ...] = ()
    #: How the reasoning settings were sent (None: none was given).
    reasoning: ReasoningPlan | None = None


def _output_blocks(spec: StructuredOutput, model: str, thinking: bool) -> OutputBlocks:
    strategy = choose_strategy(spec, model, thinking=thinking)
    if strategy == "tool" and thinking:
        raise InvalidRequestError(
            f"output.strategy 'tool' cannot be used while {model} thinks (settings.reasoning "
            "is on): the Messages API forces no tool during extended thinking; use strategy "
            "native, prompt or auto, or set reasoning to off",
            field="reasoning",
        )
    schema = spec.schema_ if isinstance(spec.schema_, dict) else {}
    if strategy == "prompt":
        return OutputBlocks(strategy, instructions=prompt_instructions(spec))
    if strategy == "native":
        reduced, dropped = reduce_schema_cached(schema)
        config = {"format": {"type": "json_schema", "schema": reduced}}
        return OutputBlocks(strategy, (("output_config", config),), dropped=tuple(dropped))
    tool = tool_name(spec.name)
    wrapped = schema.get("type") != "object"
    if wrapped:
        schema = {"type": "object", "properties": {"value": schema}, "required": ["value"]}
    tools = [{"name": tool, "description": _TOOL_DESCRIPTION, "input_schema": schema}]
    choice = {"type": "tool", "name": tool}
    return OutputBlocks(
        strategy, (("tools", tools), ("tool_choice", choice)), tool=tool, wrapped=wrapped
    )


_MEMO_LIMIT = 64
# id(spec) -> (spec, model, thinking, blocks). The entry holds the spec, so its id cannot be
# reused while the entry lives; a hit also needs the very same object, an equal model name and
# the same thinking (which decides whether a tool can be forced).
_memo: dict[int, tuple[StructuredOutput, str, bool, OutputBlocks]] = {}
_memo_lock = threading.Lock()


def output_blocks(spec: StructuredOutput, model: str, *, thinking: bool = False) -> OutputBlocks:
    """The blocks for ``spec`` on ``model`` (``thinking``: the model thinks with this request),
    computed once per spec object, model and thinking. ``InvalidRequestError`` for a ``tool``
    strategy while the model thinks."""
    hit = _memo.get(id(spec))
    if hit is not None and hit[0] is spec and hit[1] == model and hit[2] is thinking:
        return hit[3]
    blocks = _output_blocks(spec, model, thinking)
    with _memo_lock:
        if len(_memo) >= _MEMO_LIMIT:
            _memo.clear()
        _memo[id(spec)] = (spec, model, thinking, blocks)
    return blocks


def request_reasoning(request: LLMRequest) -> ReasoningPlan | None:
    """How ``request``'s reasoning settings are sent (None: it gives none)."""
    settings = request.settings
    return reasoning_plan(request.target.model, settings) if asked(settings) else None


def _add_reasoning(body: dict[str, Any], plan: ReasoningPlan) -> None:
    """The plan's members into ``body``; its ``output_config`` merged with one a structured
    output put there (a new dict: the structured-output blocks are shared)."""
    for name, value in plan.sent.items():
        if name == "output_config" and isinstance(body.get(name), dict):
            body[name] = {**body[name], **value}
        else:
            body[name] = value


def anthropic_content(
    message: Message, media: Mapping[str, bytes], encode: Encoder = b64_text
) -> str | list[dict[str, Any]]:
    """One message's ``content`` for the Messages API."""
    return content_blocks(
        message.content, media, PROVIDER, encode, text_type="text", medium=_media_block
    )


def _media_block(part: MediaPart, media_type: str, data: str) -> dict[str, Any]:
    source = {"type": "base64", "media_type": media_type, "data": data}
    if media_type == PDF_TYPE:
        return {"type": "document", "source": source, "title": part.name}
    return {"type": "image", "source": source}


def anthropic_messages(request: LLMRequest, encode: Encoder = b64_text) -> list[dict[str, Any]]:
    """The request's messages for the Messages API."""
    return message_params(request.messages, request.media, encode)


def message_params(
    messages: Sequence[Message],
    media: Mapping[str, bytes] | None = None,
    encode: Encoder = b64_text,
) -> list[dict[str, Any]]:
    """The ``messages`` member: each message's role and content, in order; a message with media
    as content blocks (:func:`anthropic_content`; ``media`` holds their bytes)."""
    media = media or {}
    return [{"role": m.role, "content": anthropic_content(m, media, encode)} for m in messages]


def build_body(request: LLMRequest, *, encode: Encoder = b64_text) -> MessagesBody:
    """The body for ``request`` (model, max tokens, messages, system, stop sequences and the
    structured-output members), and the settings left out because the API refuses them.
    ``encode`` gives the base64 text of each media block (a placeholder when the body's media are
    spliced in as it is sent: :mod:`scriptorium.llm.media.wire`)."""
    settings = request.settings
    body: dict[str, Any] = {
        "model": request.target.model,
        "max_tokens": settings.max_tokens,
        "messages": message_params(request.messages, request.media, encode),
    }
    system = request.system or ""
    output = None
    plan = request_reasoning(request)
    thinking = plan is not None and plan.thinking
    spec = request.structured_output
    if spec is not None:
        output = output_blocks(spec, request.target.model, thinking=thinking)
        body.update(output.members)
        if output.instructions:
            system = _with_instructions(system, output.instructions)
    if plan is not None:
        _add_reasoning(body, plan)
    if system:
        body["system"] = system
    if settings.stop_sequences:
        body["stop_sequences"] = list(settings.stop_sequences)
    # API version 2026-10-21 (the SDK 2.x default) rejects temperature, top_p and top_k with a
    # 400 at any value: they are left out and said so.
    if request.cache is not None:
        apply_cache(body, request.cache, request.system)
    ignored = _ignored(settings, plan)
    # session_id is deliberately not sent as metadata.user_id: that field identifies an end user
    # for abuse handling, and a rendered session id is not one.
    return MessagesBody(body, output, ignored, plan)


def count_tokens_body(body: dict[str, Any]) -> dict[str, Any]:
    """The token-counting request for a Messages ``body``: the prompt members only (no
    ``max_tokens``, stop sequences or top-level cache directive)."""
    return {key: body[key] for key in _COUNTED if key in body}


def wire_view(request: LLMRequest) -> WireView:
    """What the adapter sends for ``request`` that the request alone does not say: the system text
    with any strategy instructions (the same memoised blocks the body is built from), the
    strategy, the settings left out, and the reasoning plan (the one the body sends)."""
    plan = request_reasoning(request)
    ignored = _ignored(request.settings, plan)
    spec = request.structured_output
    if spec is None:
        return WireView(request.system, None, ignored, reasoning=plan)
    thinking = plan is not None and plan.thinking
    blocks = output_blocks(spec, request.target.model, thinking=thinking)
    system = request.system
    if blocks.instructions:
        system = _with_instructions(system or "", blocks.instructions)
    return WireView(system, blocks.strategy, ignored, blocks.dropped, plan)


def _ignored(settings: ExecutionSettings, plan: ReasoningPlan | None) -> tuple[str, ...]:
    ignored = tuple(n for n in IGNORED_SETTINGS if getattr(settings, n) is not None)
    return ignored if plan is None else (*ignored, *plan.ignored_settings)


def _with_instructions(system: str, instructions: str) -> str:
    """``instructions`` appended to the system prompt as their own paragraph."""
    return f"{system}\n\n{instructions}" if system else instructions
