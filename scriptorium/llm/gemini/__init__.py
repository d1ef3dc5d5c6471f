"""The ``gemini`` provider: the Gemini API and Vertex AI through Google's ``google-genai`` SDK.

The same skeleton as every provider package: ``api`` (what the API is, as data), ``spec`` (the
registry entry), ``sdk`` (lazy SDK import, SDK clients, the one error classifier), ``body`` (the
request body, content parts, what ``prepare`` shows as sent), ``schema`` (``responseJsonSchema``
reduction), ``reasoning`` (the thinking capability table), ``call`` (one request's translation,
the answer reader), ``stream`` and ``client``.

Names are loaded on first access, so importing this package imports neither the SDK nor the
adapter code.
"""

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr

if TYPE_CHECKING:
    from scriptorium.llm.gemini.api import DEFAULT_BASE_URL, PROVIDER
    from scriptorium.llm.gemini.body import build_body
    from scriptorium.llm.gemini.call import Call, read_answer
    from scriptorium.llm.gemini.client import GeminiClient
    from scriptorium.llm.gemini.sdk import classify, default_factory
    from scriptorium.llm.gemini.spec import SPEC

__all__ = [
    "DEFAULT_BASE_URL",
    "PROVIDER",
    "SPEC",
    "Call",
    "GeminiClient",
    "build_body",
    "classify",
    "default_factory",
    "read_answer",
]

__getattr__ = lazy_getattr(
    __name__,
    {
        "DEFAULT_BASE_URL": "api",
        "PROVIDER": "api",
        "SPEC": "spec",
        "Call": "call",
        "GeminiClient": "client",
        "build_body": "body",
        "classify": "sdk",
        "default_factory": "sdk",
        "read_answer": "call",
    },
)
