"""The ``openai`` provider: OpenAI and OpenAI-compatible servers (vLLM, Ollama, llama.cpp
server, ...) through the official SDK's Chat Completions and Responses API.

The same skeleton as every provider package: ``api`` (what the API is, as data), ``spec`` (the
registry entry), ``sdk`` (lazy SDK import, SDK clients, the one error classifier), ``body``
(parameters, content parts, what ``prepare`` shows as sent), ``schema`` (strict-mode schemas),
``cache`` (the prompt cache key rule), ``call`` (one request's translation, the completion
reader), ``stream``, ``batches`` and ``client``. The Responses API is this provider's second
flavour, chosen per request by ``apis`` (``options.api``): ``responses_body``, ``responses_call``
and ``responses_stream``; ``counting`` is its input-token count; ``servers`` the quirks table of
local servers (``options.server``).

Names are loaded on first access, so importing this package imports neither the SDK nor the
adapter code.
"""

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr

if TYPE_CHECKING:
    from scriptorium.llm.openai.api import CHAT_PATH, DEFAULT_BASE_URL, PROVIDER
    from scriptorium.llm.openai.batches import TAG_KEY, OpenAIBatches
    from scriptorium.llm.openai.body import build_params
    from scriptorium.llm.openai.call import Call, parse_completion
    from scriptorium.llm.openai.client import OpenAIClient
    from scriptorium.llm.openai.sdk import SDKFactory, classify, default_factory
    from scriptorium.llm.openai.spec import SPEC

__all__ = [
    "CHAT_PATH",
    "DEFAULT_BASE_URL",
    "PROVIDER",
    "SPEC",
    "TAG_KEY",
    "Call",
    "OpenAIBatches",
    "OpenAIClient",
    "SDKFactory",
    "build_params",
    "classify",
    "default_factory",
    "parse_completion",
]

__getattr__ = lazy_getattr(
    __name__,
    {
        "CHAT_PATH": "api",
        "DEFAULT_BASE_URL": "api",
        "PROVIDER": "api",
        "SPEC": "spec",
        "TAG_KEY": "batches",
        "Call": "call",
        "OpenAIBatches": "batches",
        "OpenAIClient": "client",
        "SDKFactory": "sdk",
        "build_params": "body",
        "classify": "sdk",
        "default_factory": "sdk",
        "parse_completion": "call",
    },
)
