"""The LLM boundary: request/response types, client ports, the router and provider adapters.

Adapters are loaded on first use; provider SDKs only when a request is actually sent.
"""

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr
from scriptorium.llm.client import AsyncClient, Client
from scriptorium.llm.model import (
    LLMRequest,
    LLMResponse,
    StructuredOutput,
    Target,
    Usage,
    provider_needs_key,
)

if TYPE_CHECKING:
    from scriptorium.llm.anthropic import AnthropicClient
    from scriptorium.llm.fake import FakeProviderClient
    from scriptorium.llm.model import KEYED_PROVIDERS
    from scriptorium.llm.openai import OpenAIClient
    from scriptorium.llm.registry import ProviderSpec, Registry
    from scriptorium.llm.replay import ReplayClient
    from scriptorium.llm.retry import RetryHooks, RetryInfo, RetryPolicy
    from scriptorium.llm.router import ProviderConfig, Router

__all__ = [
    "KEYED_PROVIDERS",
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
        "AnthropicClient": "anthropic",
        "KEYED_PROVIDERS": "model",
        "ProviderSpec": "registry",
        "Registry": "registry",
        "FakeProviderClient": "fake",
        "OpenAIClient": "openai",
        "ReplayClient": "replay",
        "RetryHooks": "retry",
        "RetryInfo": "retry",
        "RetryPolicy": "retry",
        "ProviderConfig": "registry",
        "Router": "router",
    },
)
