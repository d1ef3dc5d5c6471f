"""The ``google-genai`` SDK, imported on first use, the SDK clients, and the one place its
exceptions become retry :class:`~scriptorium.llm.model.Failure` s.

``import google.genai`` costs about a second and pulls in ``google.auth``, so nothing imports it
until a request is sent; without it, sending raises ``reason="provider_unavailable"`` naming the
``gemini`` extra.

A client is built for one :class:`~scriptorium.llm.gemini.api.Place` and credential, with
everything it would otherwise read from the environment given explicitly, so a profile alone
says where a request goes and as whom: ``vertexai``, the key (Gemini API), the project, location
and credentials (Vertex AI), the base URL and API version (``GOOGLE_GEMINI_BASE_URL`` and
``GOOGLE_VERTEX_BASE_URL``, ``GOOGLE_GENAI_API_VERSION``, ``GOOGLE_API_KEY`` and the replay
``GOOGLE_GENAI_CLIENT_MODE`` are never consulted). The SDK's own retries are off
(``HttpRetryOptions(attempts=1)``, which also stops its async client's hidden one-time retry of
a dropped connection): :mod:`scriptorium.llm.retry` is the only retry loop.

The SDK sends on HTTP clients built here, of the HTTP library it is built on (``httpx2`` or
``httpx``), so sync and async answers are the same kind of response, whether or not ``aiohttp``
is installed, and a streamed answer's body can be read by the shared stream loop as it comes.
Requests go through the SDK's own request layer (its ``BaseApiClient``: URL and API version,
Vertex AI's project path, auth headers and access tokens, its error types), without its typed
parameter and response layer: the body sent is exactly the one ``prepare`` shows.
"""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Mapping
from typing import Any

from scriptorium.errors import LLMGenerateError, describe
from scriptorium.llm.gemini.api import DEFAULT_BASE_URL, PROVIDER, Place
from scriptorium.llm.http_clients import guard
from scriptorium.llm.model import Failure
from scriptorium.llm.retry.http import classify_http
from scriptorium.llm.sdk_import import LazySDK
from scriptorium.llm.streaming import ErrorEvent

__all__ = [
    "API_VERSION",
    "VERTEX_API_VERSION",
    "GeminiSDK",
    "classify",
    "default_factory",
    "error_failure",
    "sdk",
    "vertex_base_url",
]

#: The API versions requests name (those that carry ``responseJsonSchema`` and thinking).
API_VERSION = "v1beta"
VERTEX_API_VERSION = "v1beta1"


#: The ``google.genai`` module, imported once, on first use.
sdk = LazySDK("google.genai", provider=PROVIDER, package="google-genai", extra="gemini")


def _http_library() -> Any:
    """The HTTP library the SDK is built on: ``httpx2`` when it has it, else ``httpx``."""
    base = importlib.import_module(f"{sdk().__name__}._api_client")
    return getattr(base, "httpx2", None) or base.httpx


def vertex_base_url(location: str) -> str:
    """Vertex AI's host for ``location`` (``global`` has no regional prefix)."""
    if location == "global":
        return "https://aiplatform.googleapis.com/"
    return f"https://{location}-aiplatform.googleapis.com/"


def _credentials(token: str) -> Any:
    """Vertex AI credentials: an access token (the request's key) as it is, never refreshed;
    else None (Google's default chain, looked up by the SDK on the first request)."""
    if not token:
        return None
    oauth2 = importlib.import_module("google.oauth2.credentials")
    return oauth2.Credentials(token=token)


class GeminiSDK:
    """One SDK client (``genai.Client``) for one place and credential, and the HTTP client it
    sends on (ours to close). ``api`` is the SDK's request layer."""

    def __init__(self, is_async: bool, key: str, place: Place) -> None:
        genai = sdk()
        types = genai.types
        http = _http_library()
        self.is_async = is_async
        self.place = place
        self._http = guard(http.AsyncClient() if is_async else http.Client())
        options: dict[str, Any] = {
            "retry_options": types.HttpRetryOptions(attempts=1),
            "api_version": VERTEX_API_VERSION if place.vertexai else API_VERSION,
        }
        options["httpx_async_client" if is_async else "httpx_client"] = self._http
        debug = genai.client.DebugConfig(client_mode=None, replays_directory=None, replay_id=None)
        try:
            if place.vertexai:
                options["base_url"] = place.base_url or vertex_base_url(place.location or "global")
                client = genai.Client(
                    vertexai=True,
                    credentials=_credentials(key),
                    project=place.project,
                    location=place.location,
                    http_options=types.HttpOptions(**options),
                    debug_config=debug,
                )
            else:
                options["base_url"] = place.base_url or DEFAULT_BASE_URL
                client = genai.Client(
                    vertexai=False,
                    api_key=key,
                    http_options=types.HttpOptions(**options),
                    debug_config=debug,
                )
        except ValueError as err:  # the SDK refused the settings before any request
            raise LLMGenerateError(
                f"gemini: the SDK refused the profile's settings ({describe(err)})",
                reason="config",
                provider=PROVIDER,
            ) from err
        self.client = client
        # The request layer the typed methods send through; the one object we send on.
        self.api = client._api_client

    def close(self) -> Any:
        """Close the HTTP client (awaitable for an async one)."""
        return self._http.aclose() if self.is_async else self._http.close()

    def __del__(self) -> None:
        # The SDK leaves an HTTP client it was given open; a sync one dropped with its client
        # (an engine never closed) is closed here, as the SDK closes its own. An async one is
        # closed with its event loop (the client cache).
        http = getattr(self, "_http", None)
        if http is not None and not self.is_async:
            with contextlib.suppress(Exception):  # best effort at collection time
                http.close()


def default_factory(is_async: bool, key: str, slot: str) -> GeminiSDK:
    """An SDK client for the place ``slot`` names (:meth:`Place.slot`) and ``key`` (the API key,
    or a Vertex AI access token; empty: Google's default credentials)."""
    return GeminiSDK(is_async, key, Place.from_slot(slot))


# --- errors ----------------------------------------------------------------------------------------

#: Google's error status names by HTTP status, for bodies that name none.
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
#: Words of a 429 that is a spent quota or credit, not a rate (without a RetryInfo to wait for).
_QUOTA_WORDS = ("billing", "prepayment", "credits are depleted", "credit balance")
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def _error_of(body: Any) -> dict[str, Any]:
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return error
    return {}


def _details(error: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    details = error.get("details")
    if not isinstance(details, list):
        return []
    return [d for d in details if isinstance(d, dict) and d.get("@type") == kind]


def _seconds(value: Any) -> float | None:
    """A ``google.protobuf.Duration`` in JSON ("23s", "1.5s") as seconds."""
    if isinstance(value, str) and value.endswith("s"):
        try:
            seconds = float(value[:-1])
        except ValueError:
            return None
        return seconds if seconds >= 0 else None
    return None


def error_failure(status: int, headers: Mapping[str, str], body: Any) -> Failure:
    """A Google error body (``{"error": {"code", "message", "status", "details"}}``) with HTTP
    ``status``, classified: 429 ``RESOURCE_EXHAUSTED`` is a rate limit (its ``RetryInfo`` delay
    a lower bound on the wait), a spent quota when the body says so (a daily quota in its
    ``QuotaFailure``, or billing and credits in its message, with no ``RetryInfo``); 500 and 503
    are retried; 504 ``DEADLINE_EXCEEDED`` is a timeout; a key the API refuses is ``auth``; other
    4xx are not retried."""
    error = _error_of(body)
    name = error.get("status")
    name = name if isinstance(name, str) and name else _STATUS_NAMES.get(status, "UNKNOWN")
    raw_message = error.get("message")
    message = raw_message if isinstance(raw_message, str) else ""
    failure = classify_http(status, headers, {"error": {"type": name, "message": message}})
    reason, retryable, wait = failure.reason, failure.retryable, failure.retry_after_s
    if status == 429:
        delays = [_seconds(d.get("retryDelay")) for d in _details(error, _RETRY_INFO)]
        delay = next((d for d in delays if d is not None), None)
        daily = any(
            "perday" in str(v.get("quotaId", "")).lower()
            for f in _details(error, _QUOTA_FAILURE)
            for v in (f.get("violations") or [])
            if isinstance(v, dict)
        )
        worded = any(w in str(message).lower() for w in _QUOTA_WORDS)
        if daily or (worded and delay is None):
            reason, retryable = "quota", False
        else:
            reason, retryable = "rate_limited", True
            if wait is None:
                wait = delay
    if any(d.get("reason") == "API_KEY_INVALID" for d in _details(error, _ERROR_INFO)):
        reason, retryable = "auth", False
    return Failure(reason, retryable, status, wait, f"HTTP {status} {name}: {message[:300]}")


def _transport(err: BaseException) -> Failure | None:
    module = type(err).__module__
    if not module.startswith(("httpx", "httpcore")):
        return None
    if "Timeout" in type(err).__name__:
        return Failure("timeout", True, message="request timed out")
    return Failure("connection", True, message=describe(err) or type(err).__name__)


def classify(err: BaseException) -> Failure:
    """The one translation of what the SDK (and the HTTP library under it) raises into a
    :class:`Failure`: an API error by its status and Google error body; an error object inside
    a streamed 200 (:class:`ErrorEvent`) by the code it names; connection failures and timeouts
    of the HTTP library (which the SDK does not wrap); Google credentials that cannot be found or
    refreshed (``config`` / ``auth``)."""
    if isinstance(err, ErrorEvent):
        error = _error_of(err.body)
        code = error.get("code")
        return error_failure(code if isinstance(code, int) and code >= 400 else 500, {}, err.body)
    broken = _transport(err)
    if broken is not None:
        return broken
    module = sdk()
    errors = module.errors
    if isinstance(err, errors.APIError):
        response = getattr(err, "response", None)
        headers = getattr(response, "headers", None) or {}
        code = err.code if isinstance(err.code, int) else 500
        return error_failure(code, headers, err.details)
    if isinstance(err, errors.UnknownApiResponseError):
        return Failure("invalid_response", False, 200, message="the answer is not JSON")
    auth_module = type(err).__module__
    if auth_module.startswith("google.auth"):
        kind = type(err).__name__
        if kind == "DefaultCredentialsError":
            return Failure("config", False, message="no Google default credentials were found")
        return Failure("auth", False, message=f"Google credentials failed ({kind})")
    if isinstance(err, json.JSONDecodeError):
        return Failure("invalid_response", False, 200, message="the answer is not JSON")
    if isinstance(err, ValueError | TypeError):
        return Failure("config", False, message=describe(err))
    return Failure("invalid_response", False, message=describe(err))
