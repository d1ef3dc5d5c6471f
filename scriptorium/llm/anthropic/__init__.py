"""The ``anthropic`` provider: the Messages API through the official SDK.

One package, one skeleton (the same for every provider):

- ``api``: what the API is, as data (name, base URL, paths, refused settings, limits, prices);
- ``spec``: the registry entry (``SPEC``), wired from the rest; loads no SDK;
- ``sdk``: the lazy SDK import, SDK clients, posting a prebuilt body, and the one error classifier;
- ``body``: the request body, content blocks (media included) and what ``prepare`` shows as sent;
- ``schema``: structured-output strategies and the schema reduced to what the API accepts;
- ``cache``: prompt-caching directives, 1-hour writes and the models' cache minimums;
- ``call``: one request's translation to and from the API, used by every path;
- ``stream``, ``batches``, ``client``: streaming, Message Batches, and the adapter users hold.

Names are loaded on first access, so importing this package imports neither the SDK nor the
adapter code.
"""

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr

if TYPE_CHECKING:
    from scriptorium.llm.anthropic.api import DEFAULT_BASE_URL, PROVIDER
    from scriptorium.llm.anthropic.batches import AnthropicBatches
    from scriptorium.llm.anthropic.call import Call
    from scriptorium.llm.anthropic.client import AnthropicClient
    from scriptorium.llm.anthropic.sdk import (
        SDKFactory,
        apost_messages,
        classify,
        default_factory,
        http_response_class,
        post_messages,
    )
    from scriptorium.llm.anthropic.spec import SPEC

__all__ = [
    "DEFAULT_BASE_URL",
    "PROVIDER",
    "SPEC",
    "AnthropicBatches",
    "AnthropicClient",
    "Call",
    "SDKFactory",
    "apost_messages",
    "classify",
    "default_factory",
    "http_response_class",
    "post_messages",
]

__getattr__ = lazy_getattr(
    __name__,
    {
        "DEFAULT_BASE_URL": "api",
        "PROVIDER": "api",
        "SPEC": "spec",
        "AnthropicBatches": "batches",
        "AnthropicClient": "client",
        "Call": "call",
        "SDKFactory": "sdk",
        "apost_messages": "sdk",
        "classify": "sdk",
        "default_factory": "sdk",
        "http_response_class": "sdk",
        "post_messages": "sdk",
    },
)
