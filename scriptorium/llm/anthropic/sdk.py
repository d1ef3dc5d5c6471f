"""The ``anthropic`` SDK, imported on first use, and the one place its exceptions become retry
:class:`~scriptorium.llm.model.Failure` s.

``import anthropic`` costs seconds and tens of MiB, so nothing imports it until a request is sent;
without it, sending raises ``reason="provider_unavailable"``. SDK clients are built with their own
retries off and the key and base URL passed explicitly (:func:`default_factory`).

A prebuilt body is posted with the SDK's lower-level ``post`` (:func:`post_messages`): auth, base
URL, headers, timeouts and error types stay the SDK's; its typed parameter and ``Message`` layer is
skipped, and the SDK's own client class sends through :mod:`scriptorium.llm.anthropic.direct`.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable
from typing import Any

from scriptorium._version import install_hint
from scriptorium.errors import describe
from scriptorium.llm.anthropic.api import BEDROCK_ERRORS, ERROR_STATUS, MESSAGES_PATH, PROVIDER
from scriptorium.llm.anthropic.direct import direct_post
from scriptorium.llm.http_clients import sdk_http_client
from scriptorium.llm.model import Failure
from scriptorium.llm.retry.http import classify_http, transport_failure
from scriptorium.llm.sdk_http import encode_body, http_module
from scriptorium.llm.sdk_import import LazySDK
from scriptorium.llm.streaming import ErrorEvent

__all__ = [
    "SDKFactory",
    "aopen_messages_stream",
    "apost_messages",
    "classify",
    "default_factory",
    "http_response_class",
    "open_messages_stream",
    "post_messages",
    "sdk",
]

#: ``sdk_factory(is_async, api_key, base_url)`` -> an ``anthropic.Anthropic``/``AsyncAnthropic``.
SDKFactory = Callable[[bool, str, str], Any]

_response_class: Any = None


#: The ``anthropic`` module, imported once, on first use.
sdk = LazySDK("anthropic", provider=PROVIDER, package="anthropic", extra="anthropic")


def http_response_class() -> Any:
    """The ``Response`` class of the SDK's HTTP library: as ``cast_to`` it makes the SDK hand back
    the HTTP response itself, unparsed (``httpx2`` for SDK 2.x, ``httpx`` before)."""
    global _response_class
    if _response_class is None:
        _response_class = http_module(sdk()).Response
    return _response_class


# SDK client -> the absolute Messages URL under its base URL. Given whole, the SDK sends to it as
# it is instead of parsing the path and merging it into the base URL again on every request.
_messages_urls: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def _messages_url(client: Any) -> str:
    try:
        url = _messages_urls.get(client)
    except TypeError:  # not weakly referenceable (a wrapper from an sdk_factory): not remembered
        return _url_under(client)
    if url is None:
        url = _messages_urls[client] = _url_under(client)
    return url


def _url_under(client: Any) -> str:
    # A client that does not show its base URL (a wrapper) gets the path, which it resolves.
    base = getattr(client, "base_url", None)
    return MESSAGES_PATH if base is None else str(base).rstrip("/") + MESSAGES_PATH


def post_messages(client: Any, body: dict[str, Any], timeout_s: float) -> tuple[bytes, Any]:
    """Send one prebuilt Messages API body as the SDK's lower-level ``post`` would: its auth, base
    URL, headers, timeout and error types, without its typed parameter and response layer. The
    body goes as bytes we encode (the SDK would walk and copy the dict, then encode it); the SDK's
    own client sends it through :mod:`scriptorium.llm.anthropic.direct` (the request's headers worked out
    once), any other client through ``post``. Returns the response body's bytes and headers; an
    error status raises the SDK's ``APIStatusError``."""
    url = _messages_url(client)
    direct = direct_post(sdk(), client, url)
    if direct is not None:
        response = direct.send(encode_body(body), timeout_s)
    else:
        response = client.post(
            url,
            content=encode_body(body),
            cast_to=http_response_class(),
            options={"timeout": timeout_s},
        )
    return response.content, response.headers


async def apost_messages(client: Any, body: dict[str, Any], timeout_s: float) -> tuple[bytes, Any]:
    """The async twin of :func:`post_messages`."""
    url = _messages_url(client)
    direct = direct_post(sdk(), client, url)
    if direct is not None:
        response = await direct.asend(encode_body(body), timeout_s)
    else:
        response = await client.post(
            url,
            content=encode_body(body),
            cast_to=http_response_class(),
            options={"timeout": timeout_s},
        )
    return response.content, response.headers


def open_messages_stream(client: Any, body: dict[str, Any], timeout_s: float, post: Any) -> Any:
    """The unread HTTP response of a streamed Messages request: through the direct send for the
    SDK's own client (the first delta comes sooner), else ``post()`` (the caller's SDK post)."""
    direct = direct_post(sdk(), client, _messages_url(client))
    if direct is None:
        return post()
    return direct.open(encode_body({**body, "stream": True}), timeout_s)


async def aopen_messages_stream(
    client: Any, body: dict[str, Any], timeout_s: float, post: Any
) -> Any:
    """The async twin of :func:`open_messages_stream` (``post`` returns an awaitable)."""
    direct = direct_post(sdk(), client, _messages_url(client))
    if direct is None:
        return await post()
    return await direct.aopen(encode_body({**body, "stream": True}), timeout_s)


def default_factory(is_async: bool, api_key: str, base_url: str) -> Any:
    """An SDK client for ``base_url`` and ``api_key``, with its own retries off."""
    module = sdk()
    cls = module.AsyncAnthropic if is_async else module.Anthropic
    # max_retries=0: ours is the only retry loop. Key and base URL explicit, so the SDK reads
    # neither from the environment nor from its profile files.
    # http_client: the SDK's own HTTP client with our guard (llm/http_clients.py).
    client = cls(
        api_key=api_key,
        base_url=base_url,
        max_retries=0,
        http_client=sdk_http_client(module, is_async),
    )
    # The SDK also merges ANTHROPIC_CUSTOM_HEADERS from the environment into every request (and
    # they would override the auth header); a profile alone decides what is sent.
    if hasattr(client, "_custom_headers"):
        client._custom_headers = {}
    client.webhook_key = None
    return client


def _bedrock_name(kind: Any) -> str | None:
    """A Bedrock error name as :data:`BEDROCK_ERRORS` keys it (``ThrottlingException:http://...``
    and ``throttlingException`` both ``throttling``), or None when it is not one."""
    if not isinstance(kind, str):
        return None
    name = kind.split(":", 1)[0].strip().lower().removesuffix("exception")
    return name if name in BEDROCK_ERRORS else None


def _bedrock(failure: Failure, name: str | None) -> Failure:
    """``failure`` as Bedrock's error name says it (see :data:`BEDROCK_ERRORS`)."""
    if name is None:
        return failure
    meant = BEDROCK_ERRORS[name][1]
    if meant is not None and failure.reason != "quota":
        return dataclasses.replace(failure, reason=meant[0], retryable=meant[1])
    if name == "validation" and "too long" in failure.message.lower():
        # Bedrock's "Input is too long for requested model": the context window.
        return dataclasses.replace(failure, reason="context_window", retryable=False)
    return failure


#: Where a cloud platform's credential chain raises from as its SDK class signs a request
#: (botocore's, google-auth's): no credentials found, expired, refused.
_CREDENTIAL_MODULES = ("botocore.", "google.auth.")
#: The libraries a platform's SDK class imports as it signs, and the extra that brings each.
_PLATFORM_LIBRARIES = {"boto3": "bedrock", "botocore": "bedrock", "google": "vertex"}


def _chain_failure(err: BaseException) -> Failure | None:
    """A cloud platform's credential chain failing (no AWS credentials resolved, Google's default
    credentials missing or refused) as ``auth``; its library missing as ``provider_unavailable``.
    None for anything else."""
    if isinstance(err, ImportError):
        extra = _PLATFORM_LIBRARIES.get(str(err.name or "").split(".")[0])
        if extra is None:
            return None
        return Failure(
            "provider_unavailable",
            False,
            message=f"{describe(err)}: the {extra} extra is missing: " + install_hint(extra),
        )
    aws = type(err).__module__.startswith("botocore.")
    chained = aws or type(err).__module__.startswith(_CREDENTIAL_MODULES)
    # AnthropicBedrock's own words when the AWS chain resolves nothing ("... AWS credentials ...";
    # releases before 0.77: "could not resolve credentials from session").
    unresolved = isinstance(err, RuntimeError) and "credentials" in str(err)
    if chained or unresolved:
        hint = _AWS_HINT if aws or unresolved else _GOOGLE_HINT
        return Failure("auth", False, message=f"the platform's credentials: {describe(err)}{hint}")
    return None


# What to do when a platform's credential chain finds nothing (no key is ever named here).
_AWS_HINT = (
    " (Bedrock signs with AWS credentials: export AWS_PROFILE or AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY, run `aws configure`, or set options.aws_profile)"
)
_GOOGLE_HINT = (
    " (Vertex AI uses Google's default credentials: run `gcloud auth application-default "
    "login`, or set options.access_token_env)"
)


def _error_event(body: Any, headers: Any) -> Failure:
    body = body if isinstance(body, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), dict) else body
    kind = error.get("type") if isinstance(error, dict) else None
    bedrock = _bedrock_name(kind)
    if bedrock is not None:
        status = BEDROCK_ERRORS[bedrock][0]
    else:
        status = ERROR_STATUS.get(kind if isinstance(kind, str) else "", 500)
    return _bedrock(classify_http(status, headers, body), bedrock)


def classify(err: BaseException) -> Failure:
    """The one translation of what the SDK raises into a :class:`Failure`: by class, status and
    body type; an ``error`` event inside a streamed 200 (:class:`ErrorEvent`, or the SDK's own
    status error with status 200) as the status its type names; a connection broken while a
    stream's body is read (which the SDK does not wrap)."""
    if isinstance(err, ErrorEvent):
        return _error_event(err.body, {})
    module = sdk()
    if isinstance(err, module.APIStatusError):
        if err.status_code == 200:  # an ``error`` event in a stream: classified as its status
            return _error_event(err.body, err.response.headers)
        headers = err.response.headers
        failure = classify_http(err.status_code, headers, err.body)
        # Bedrock names its errors in a header (the body is only {"message": ...}).
        return _bedrock(failure, _bedrock_name(headers.get("x-amzn-errortype")))
    if isinstance(err, module.APITimeoutError):
        return Failure("timeout", True, message="request timed out")
    if isinstance(err, module.APIConnectionError):
        cause = err.__cause__
        detail = describe(cause) if cause is not None else "connection error"
        return Failure("connection", True, message=detail)
    if isinstance(err, module.APIResponseValidationError):
        return Failure("invalid_response", False, err.status_code, message="response failed checks")
    broken = transport_failure(err) or _chain_failure(err)
    if broken is not None:
        return broken
    if isinstance(err, TypeError | ValueError):  # the SDK refused our parameters before sending
        return Failure("invalid_request", False, message=describe(err))
    return Failure("invalid_response", False, message=describe(err))
