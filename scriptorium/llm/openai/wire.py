"""What ``prepare`` shows as sent for an ``openai`` request, on the API it travels (its
``options.api``: Chat Completions or the Responses API)."""

from __future__ import annotations

from typing import Any

from scriptorium.llm.model import LLMRequest
from scriptorium.llm.openai.apis import api_of
from scriptorium.llm.openai.body import build_params
from scriptorium.llm.openai.body import wire_view as chat_wire_view
from scriptorium.llm.openai.responses_body import build_responses_params, responses_wire_view
from scriptorium.llm.registry import WireView

__all__ = ["structured_members", "wire_view"]

#: The body members that ask for a structured output, on either API.
_STRUCTURED = ("response_format", "text", "tools", "tool_choice")


def wire_view(request: LLMRequest) -> WireView:
    """What ``request`` looks like on the wire of its API."""
    if api_of(request) == "responses":
        return responses_wire_view(request)
    return chat_wire_view(request)


def structured_members(request: LLMRequest) -> dict[str, Any]:
    """The members of the body that ask for the structured output, as they go out."""
    build = build_responses_params if api_of(request) == "responses" else build_params
    params, _ = build(request)
    return {name: params[name] for name in _STRUCTURED if name in params}
