"""Prompt caching for Chat Completions: OpenAI caches long prefixes by itself, with nothing to
mark; ``prompt_cache_key`` (the prompt's definition hash) routes every run of one prompt to the
same cache. OpenAI's own endpoint takes the key; a compatible server may refuse unknown
parameters, so it gets one only when its profile says ``options: {prompt_cache_key: true}``."""

from __future__ import annotations

from typing import Any

from scriptorium.llm.model import LLMRequest
from scriptorium.llm.openai.api import is_openai_endpoint

__all__ = ["cache_params", "takes_cache_key"]


def takes_cache_key(request: LLMRequest) -> bool:
    """Whether ``request``'s endpoint is sent a ``prompt_cache_key`` (see the module)."""
    if is_openai_endpoint(request.target.endpoint):
        return True
    return request.options.get("prompt_cache_key") is True


def cache_params(request: LLMRequest) -> dict[str, Any]:
    """The parameters ``request``'s cache directives add (none when caching is off)."""
    cache = request.cache
    if cache is None or not cache.key or not takes_cache_key(request):
        return {}
    return {"prompt_cache_key": cache.key}
