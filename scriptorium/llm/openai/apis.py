"""Which of OpenAI's two generation APIs a request travels on: Chat Completions or the Responses
API, chosen by the profile's ``options.api`` (``chat``, ``responses`` or ``auto``, the default).

``auto`` sends a model the dated table :data:`~scriptorium.llm.openai.api.RESPONSES_ONLY` lists
to the Responses API (those models answer nothing else) and every other model to Chat
Completions. A profile whose ``endpoint:`` names a server other than OpenAI's (vLLM, Ollama, a
gateway) stays on Chat Completions under ``auto``: that is the API every compatible server
speaks. A base URL read from ``OPENAI_BASE_URL`` is not the profile's ``endpoint:``, so there the
model decides, as on OpenAI's own endpoint. On Azure the deployment serves one of OpenAI's
models: the model decides (``options.base_model`` when given, else the deployment's name).

The choice is how a request travels, not what it asks: it is not part of ``request_hash``.
"""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any, Literal

from scriptorium._suggest import did_you_mean
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import LLMRequest
from scriptorium.llm.openai.api import API_VALUES, PROVIDER, RESPONSES_ONLY, is_openai_endpoint
from scriptorium.llm.openai.azure import is_azure

__all__ = ["Api", "api_of", "api_problems", "chosen_api", "responses_only"]

Api = Literal["chat", "responses"]


def responses_only(model: str) -> bool:
    """Whether the dated table lists ``model`` as answering only on the Responses API."""
    name = model.strip().lower()
    return any(fnmatchcase(name, pattern) for pattern in RESPONSES_ONLY)


def api_problems(options: Mapping[str, Any]) -> list[str]:
    """What is wrong with ``options.api`` (for ``check``; refused when a request is built)."""
    value = options.get("api")
    if value is None or value in API_VALUES:
        return []
    hint = did_you_mean(str(value), API_VALUES)
    return [f"options.api {str(value)[:40]!r} must be one of {', '.join(API_VALUES)}{hint}"]


def chosen_api(
    model: str,
    options: Mapping[str, Any],
    endpoint: str | None,
    endpoint_source: str | None = None,
) -> Api:
    """The API a request for ``model`` with the profile's ``options`` goes to (see the
    module); ``endpoint_source`` ``env`` marks a base URL from ``OPENAI_BASE_URL``."""
    value = options.get("api", "auto")
    if value == "chat":
        return "chat"
    if value == "responses":
        return "responses"
    if value != "auto":
        raise LLMGenerateError(
            f"openai: {api_problems(options)[0]}", reason="config", provider=PROVIDER, model=model
        )
    if is_azure(options):
        base = options.get("base_model")
        return "responses" if responses_only(base if isinstance(base, str) else model) else "chat"
    if endpoint_source != "env" and not is_openai_endpoint(endpoint):
        return "chat"  # a compatible server named by the profile speaks Chat Completions
    return "responses" if responses_only(model) else "chat"


def api_of(request: LLMRequest) -> Api:
    """The API ``request`` travels on (:func:`chosen_api` of its target and options)."""
    target = request.target
    return chosen_api(target.model, request.options, target.endpoint, target.endpoint_source)
