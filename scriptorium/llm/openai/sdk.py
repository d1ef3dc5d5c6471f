"""The ``openai`` SDK, imported on first use, and the one place its exceptions become retry
:class:`~scriptorium.llm.model.Failure` s.

SDK clients are built with their own retries off (:mod:`scriptorium.llm.retry` is the only retry
loop), the key and base URL passed explicitly, and what the SDK would otherwise pick up from the
environment (``OPENAI_ORG_ID``, ``OPENAI_PROJECT_ID``, ``OPENAI_CUSTOM_HEADERS``, ...) cleared: a
profile alone says where a request goes and as whom (:func:`default_factory`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

from scriptorium.errors import describe
from scriptorium.llm.http_clients import sdk_http_client
from scriptorium.llm.model import Failure
from scriptorium.llm.openai.api import PROVIDER
from scriptorium.llm.retry.http import classify_http, transport_failure
from scriptorium.llm.sdk_http import http_module
from scriptorium.llm.sdk_import import LazySDK
from scriptorium.llm.streaming import ErrorEvent

__all__ = [
    "SDKFactory",
    "classify",
    "default_factory",
    "http_response_class",
    "scrubbed",
    "sdk",
]

#: ``sdk_factory(is_async, api_key, base_url)`` -> an ``openai.OpenAI``/``AsyncOpenAI``.
SDKFactory = Callable[[bool, str, str], Any]

# OpenAI echoes a masked key in 401 messages ("sk-ab***yz"); even fragments stay out of errors.
_MASKED_KEY = re.compile(r"\S*\*{3,}\S*")

# The status an error chunk's type or code stands for (it arrives inside a streamed 200).
_STATUS_OF_ERROR = {
    "rate_limit_exceeded": 429,
    "requests": 429,
    "tokens": 429,
    "insufficient_quota": 429,
    "invalid_request_error": 400,
    "server_error": 500,
    "overloaded": 503,
    "service_unavailable": 503,
}


#: The ``openai`` module, imported once, on first use.
sdk = LazySDK("openai", provider=PROVIDER, package="openai", extra="openai")


@functools.cache
def http_response_class() -> Any:
    """The SDK's HTTP ``Response`` class: as ``cast_to`` it makes ``post`` hand back the HTTP
    response itself, unparsed (looked up once: it is asked for on every attempt)."""
    return http_module(sdk()).Response


def scrubbed(client: Any) -> Any:
    """``client`` without what the SDK filled in from the environment (organization, project,
    admin key, webhook secret, ``OPENAI_CUSTOM_HEADERS``): a profile names none of them."""
    client.organization = None
    client.project = None
    client.admin_api_key = None
    client.webhook_secret = None
    if hasattr(client, "_custom_headers"):
        client._custom_headers = {}
    return client


#: The key an SDK client is built with for a server that takes none (a local server's profile
#: naming no key): the SDK refuses to be built without one. Requests made with it omit their
#: ``Authorization`` header (:func:`auth_headers`), so no server ever sees it.
NO_KEY = "no-key"


def auth_headers(key: str) -> dict[str, Any] | None:
    """The per-request headers for a call made with ``key``: None (the client's own
    ``Authorization``) when there is a key; when there is none, ``Authorization`` omitted, the
    SDK's documented way to send a request without it."""
    return None if key else {"Authorization": sdk().Omit()}


def default_factory(is_async: bool, api_key: str, base_url: str) -> Any:
    """An SDK client for ``base_url`` and ``api_key`` (``""``: none, see :data:`NO_KEY`),
    retries off, environment ignored."""
    module = sdk()
    cls = module.AsyncOpenAI if is_async else module.OpenAI
    # http_client: the SDK's own HTTP client with our guard (llm/http_clients.py).
    http_client = sdk_http_client(module, is_async)
    return scrubbed(
        cls(api_key=api_key or NO_KEY, base_url=base_url, max_retries=0, http_client=http_client)
    )


def _error_chunk(body: Any) -> Failure:
    """An error chunk's object, classified as the status its code or type stands for."""
    body = body if isinstance(body, Mapping) else {}
    kinds = [body.get("code"), body.get("type")]
    status = next((_STATUS_OF_ERROR[k] for k in kinds if k in _STATUS_OF_ERROR), 500)
    return classify_http(status, {}, {"error": dict(body)})


def classify(err: BaseException) -> Failure:
    """The one translation of what the SDK raises into a :class:`Failure`: status errors by
    status and body (a masked key echoed in the message removed); an error chunk inside a
    streamed 200 (an ``APIError`` without a status) as the status its type or code names; a
    connection broken while a stream's body is read (which the SDK does not wrap)."""
    if isinstance(err, ErrorEvent):
        return _error_chunk(err.body)
    module = sdk()
    if isinstance(err, module.APIStatusError):
        failure = classify_http(err.status_code, err.response.headers, err.body)
        message = _MASKED_KEY.sub("[redacted]", failure.message)
        return Failure(
            failure.reason,
            failure.retryable,
            failure.http_status,
            failure.retry_after_s,
            message,
        )
    if isinstance(err, module.APITimeoutError):
        return Failure("timeout", True, message="request timed out")
    if isinstance(err, module.APIConnectionError):
        cause = err.__cause__ or err.__context__
        return Failure("connection", True, message=describe(cause) if cause else "connection error")
    if isinstance(err, module.APIResponseValidationError):
        return Failure("invalid_response", False, err.status_code, message="response failed checks")
    if isinstance(err, module.APIError):  # an error chunk in a stream, as the SDK reads one
        return _error_chunk(err.body)
    if isinstance(err, module.OpenAIError):
        return Failure("config", False, message=describe(err))
    broken = transport_failure(err)
    if broken is not None:
        return broken
    return Failure("invalid_response", False, message=describe(err))
