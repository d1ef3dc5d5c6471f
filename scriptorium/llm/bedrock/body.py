"""A request as Bedrock's Converse API takes it: ``modelId``, ``system``, ``messages``,
``inferenceConfig``, ``toolConfig`` and ``additionalModelRequestFields`` (the keyword arguments of
boto3's ``converse`` / ``converse_stream``).

- System text -> ``system: [{"text": ...}]``; messages -> ``messages`` with text, image
  (``{"image": {"format", "source": {"bytes"}}}``) and document (``{"document": {"format": "pdf",
  "name", "source": {"bytes"}}}``) blocks, in the order the prompt placed them.
- ``max_tokens``, ``temperature``, ``top_p``, ``stop_sequences`` -> ``inferenceConfig``;
  ``top_k`` is ignored (Converse has no common field for it).
- Structured output: ``tool`` forces one tool (``toolChoice``) whose input schema is the output
  schema, and its input is the answer; ``prompt`` appends the schema to the system text; ``auto``
  picks ``tool`` for a model the dated table says takes tools, else ``prompt``. No model in the
  table offers a JSON-schema output format through Converse, so ``native`` is refused at prepare
  naming the strategies that work.
- Reasoning: a model the table lists as thinking gets ``additionalModelRequestFields.thinking``
  with a budget (``reasoning_budget_tokens``, else one per level); ``off`` and other models send
  nothing and the settings are shown as ignored. A forced tool cannot be combined with thinking,
  so ``auto`` then picks ``prompt`` and an explicit ``tool`` is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scriptorium.artifact.media import media_kind
from scriptorium.errors import InvalidRequestError, LLMGenerateError
from scriptorium.llm.bedrock.api import IGNORED_SETTINGS, PROVIDER, takes_thinking, takes_tools
from scriptorium.llm.model import LLMRequest, StructuredOutput
from scriptorium.llm.registry import WireView
from scriptorium.llm.structured import prompt_instructions
from scriptorium.prompt.model import MediaPart, Message, TextPart

__all__ = ["THINKING_BUDGETS", "Built", "build", "choose_strategy", "wire_view"]

#: The thinking budget of each level when no ``reasoning_budget_tokens`` is given.
THINKING_BUDGETS: Mapping[str, int] = {
    "low": 1024,
    "medium": 4096,
    "high": 16_000,
    "xhigh": 32_000,
    "max": 64_000,
}
_IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
_DOCUMENT_NAME = re.compile(r"[^A-Za-z0-9 ()\[\]-]+")
_REASONING_SETTINGS = ("reasoning", "reasoning_budget_tokens")


@dataclass(frozen=True)
class Built:
    """The ``converse`` keyword arguments for a request, and what was chosen for it."""

    params: dict[str, Any]
    strategy: str | None
    tool: str | None
    ignored: tuple[str, ...]
    thinking_budget: int | None = None


def _thinking_budget(request: LLMRequest) -> int | None:
    settings = request.settings
    if settings.reasoning in (None, "off") and settings.reasoning_budget_tokens is None:
        return None
    if settings.reasoning == "off" or not takes_thinking(request.target.model):
        return None
    budget = settings.reasoning_budget_tokens
    if budget is None:
        budget = THINKING_BUDGETS.get(settings.reasoning or "medium", THINKING_BUDGETS["medium"])
    if budget < 1024 or budget >= settings.max_tokens:
        raise InvalidRequestError(
            f"bedrock {request.target.model}: a thinking budget of {budget} tokens needs "
            f"1024 <= budget < max_tokens ({settings.max_tokens}); raise max_tokens or set "
            "reasoning_budget_tokens",
            field="reasoning_budget_tokens",
        )
    return budget


def choose_strategy(
    model: str, structured: StructuredOutput | None, *, thinking: bool = False
) -> str | None:
    """The structured-output strategy sent for ``structured`` on ``model`` (None: plain text)."""
    if structured is None:
        return None
    wanted = structured.strategy
    if wanted == "native":
        raise InvalidRequestError(
            f"bedrock {model}: Converse offers no JSON-schema output format for this model; "
            "use strategy tool or prompt (auto picks the best)",
            field="strategy",
        )
    if wanted == "tool" and thinking:
        raise InvalidRequestError(
            f"bedrock {model}: a forced tool (strategy tool) cannot be combined with thinking; "
            "use strategy prompt or auto, or turn reasoning off",
            field="strategy",
        )
    if wanted == "auto":
        usable = structured.format == "json_schema" and isinstance(structured.schema_, dict)
        return "tool" if usable and takes_tools(model) and not thinking else "prompt"
    return wanted


def _system(request: LLMRequest, strategy: str | None) -> str | None:
    system = request.system
    if strategy == "prompt" and request.structured_output is not None:
        instructions = prompt_instructions(request.structured_output)
        return f"{system}\n\n{instructions}" if system else instructions
    return system


def _media_block(part: MediaPart, data: bytes | None) -> dict[str, Any]:
    if data is None:
        raise LLMGenerateError(
            f"bedrock: the bytes of artifact {part.name!r} are not in the request",
            reason="invalid_request",
            provider=PROVIDER,
        )
    if media_kind(part.media_type) == "pdf":
        name = _DOCUMENT_NAME.sub(" ", part.name).strip()[:200] or "document"
        return {"document": {"format": "pdf", "name": name, "source": {"bytes": data}}}
    image = _IMAGE_FORMATS.get(part.media_type)
    if image is None:
        raise LLMGenerateError(
            f"bedrock: artifact {part.name!r} ({part.media_type}) is no image or PDF",
            reason="invalid_request",
            provider=PROVIDER,
        )
    return {"image": {"format": image, "source": {"bytes": data}}}


def _content(message: Message, media: Mapping[str, bytes]) -> list[dict[str, Any]]:
    if isinstance(message.content, str):
        return [{"text": message.content}]
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, TextPart):
            if part.text:
                blocks.append({"text": part.text})
        else:
            blocks.append(_media_block(part, media.get(part.sha256)))
    return blocks or [{"text": ""}]


def _ignored(request: LLMRequest, thinking: int | None) -> tuple[str, ...]:
    settings = request.settings
    ignored = [n for n in IGNORED_SETTINGS if getattr(settings, n) is not None]
    if thinking is None:
        ignored.extend(n for n in _REASONING_SETTINGS if getattr(settings, n) is not None)
    return tuple(ignored)


def build(request: LLMRequest) -> Built:
    """The ``converse`` arguments for ``request`` (``InvalidRequestError`` for a strategy the
    model cannot use)."""
    model = request.target.model
    budget = _thinking_budget(request)
    strategy = choose_strategy(model, request.structured_output, thinking=budget is not None)
    settings = request.settings
    inference: dict[str, Any] = {"maxTokens": settings.max_tokens}
    if settings.temperature is not None:
        inference["temperature"] = settings.temperature
    if settings.top_p is not None:
        inference["topP"] = settings.top_p
    if settings.stop_sequences:
        inference["stopSequences"] = list(settings.stop_sequences)
    params: dict[str, Any] = {
        "modelId": model,
        "messages": [
            {"role": m.role, "content": _content(m, request.media)}
            for m in request.messages
            if m.role in ("user", "assistant")
        ],
        "inferenceConfig": inference,
    }
    system = _system(request, strategy)
    if system:
        params["system"] = [{"text": system}]
    tool = None
    spec = request.structured_output
    if strategy == "tool" and spec is not None and isinstance(spec.schema_, dict):
        tool = _tool_name(spec.name)
        params["toolConfig"] = {
            "tools": [
                {
                    "toolSpec": {
                        "name": tool,
                        "description": "Give the answer as this tool's input.",
                        "inputSchema": {"json": spec.schema_},
                    }
                }
            ],
            "toolChoice": {"tool": {"name": tool}},
        }
    if budget is not None:
        params["additionalModelRequestFields"] = {
            "thinking": {"type": "enabled", "budget_tokens": budget}
        }
    return Built(params, strategy, tool, _ignored(request, budget), budget)


def _tool_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]
    return cleaned or "output"


def wire_view(request: LLMRequest) -> WireView:
    """What ``prepare`` shows as sent: the system text, the strategy and the ignored settings."""
    model = request.target.model
    budget = _thinking_budget(request)
    strategy = choose_strategy(model, request.structured_output, thinking=budget is not None)
    return WireView(_system(request, strategy), strategy, _ignored(request, budget))
