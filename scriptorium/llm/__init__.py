"""The LLM boundary: request/response types, client ports, the router and provider adapters.

Adapters are loaded on first use; provider SDKs only when a request is actually sent.
"""

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr
from scriptorium.llm.client import AsyncClient, Client
from scriptorium.llm.model import LLMRequest, LLMResponse, StructuredOutput, Target, Usage

if TYPE_CHECKING:
    from scriptorium.llm.anthropic.client import AnthropicClient
    from scriptorium.llm.fake import FakeProviderClient
    from scriptorium.llm.model import RetryInfo
    from scriptorium.llm.openai.client import OpenAIClient
    from scriptorium.llm.registry import (
        ProviderConfig,
        ProviderSpec,
        Registry,
        provider_needs_key,
    )
    from scriptorium.llm.replay import ReplayClient
    from scriptorium.llm.retry.policy import RetryHooks, RetryPolicy
    from scriptorium.llm.router import Router

__all__ = [
    "AnthropicClient",
    "AsyncClient",
    "Client",
    "FakeProviderClient",
    "LLMRequest",
    "LLMResponse",
    "OpenAIClient",
    "ProviderConfig",
    "ProviderSpec",
    "Registry",
    "ReplayClient",
    "RetryHooks",
    "RetryInfo",
    "RetryPolicy",
    "Router",
    "StructuredOutput",
    "Target",
    "Usage",
    "provider_needs_key",
]

__getattr__ = lazy_getattr(
    __name__,
    {
        "AnthropicClient": "anthropic.client",
        "ProviderSpec": "registry",
        "Registry": "registry",
        "FakeProviderClient": "fake",
        "OpenAIClient": "openai.client",
        "ReplayClient": "replay",
        "RetryHooks": "retry.policy",
        "RetryInfo": "model",
        "RetryPolicy": "retry.policy",
        "ProviderConfig": "registry",
        "Router": "router",
        "provider_needs_key": "registry",
    },
)
