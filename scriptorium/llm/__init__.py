"""The LLM boundary: request/response types, client ports, the router and provider adapters."""

from scriptorium.llm.client import AsyncClient, Client
from scriptorium.llm.model import (
    KEYED_PROVIDERS,
    LLMRequest,
    LLMResponse,
    StructuredOutput,
    Target,
    Usage,
    provider_needs_key,
)

__all__ = [
    "KEYED_PROVIDERS",
    "AsyncClient",
    "Client",
    "LLMRequest",
    "LLMResponse",
    "StructuredOutput",
    "Target",
    "Usage",
    "provider_needs_key",
]
