"""How a failed attempt is classified for the retry loop, provider-free: an HTTP error response by
status, the body's error ``type``/``code``, ``x-should-retry`` and ``retry-after``/
``retry-after-ms`` (:func:`classify_http`); a connection broken while a body is read
(:func:`transport_failure`); and any exception through an adapter's classifier, scriptorium's own
errors as they already say (:func:`as_failure`). Each provider's one classifier is built from
these."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.deadline import DeadlineExceeded
from scriptorium.llm.model import Failure

__all__ = [
    "Classify",
    "as_failure",
    "classify_http",
    "failure_error",
    "parse_retry_after",
    "transport_failure",
]

#: ``classify(err)`` -> the :class:`Failure` an exception stands for (one per provider adapter).
Classify = Callable[[BaseException], Failure]


def as_failure(err: BaseException, classify: Classify) -> Failure:
    """The classification of ``err``: scriptorium's own ``LLMGenerateError`` as it already says
    (an adapter decided, e.g. ``invalid_response``), anything else through ``classify``; a
    classifier that itself fails leaves the error unclassifiable (``invalid_response``) rather
    than let a foreign exception escape."""
    if isinstance(err, DeadlineExceeded):
        return Failure("timeout", True, message=str(err) or "the run's deadline passed")
    if isinstance(err, LLMGenerateError):
        return Failure(
            reason=err.reason or "invalid_response",
            retryable=bool(err.retryable),
            http_status=err.http_status,
            retry_after_s=err.retry_after_s,
            message=err.message,
        )
    try:
        return classify(err)
    except Exception as broken:
        note = f"unclassifiable {type(err).__name__} ({type(broken).__name__} in classify)"
        return Failure("invalid_response", False, message=note)


def failure_error(failure: Failure, message: str, **fields: Any) -> LLMGenerateError:
    """The ``LLMGenerateError`` a call ends with for ``failure`` (the other way from
    :func:`as_failure`): its reason, retryability, status and retry-after, with ``message``
    (already scrubbed) and the call's own ``fields`` (attempts, provider, model, ...)."""
    return LLMGenerateError(
        message,
        reason=failure.reason,
        retryable=failure.retryable,
        http_status=failure.http_status,
        retry_after_s=failure.retry_after_s,
        **fields,
    )


def transport_failure(err: BaseException) -> Failure | None:
    """A connection broken (or timed out) while a response body is read, which the SDKs do not
    wrap: their HTTP library's own exception. None when ``err`` is not one."""
    module = type(err).__module__
    if not module.startswith(("httpx", "httpcore")):
        return None
    if "Timeout" in type(err).__name__:
        return Failure("timeout", True, message="stream read timed out")
    return Failure("connection", True, message=f"stream broken: {type(err).__name__}")


_QUOTA_CODES = ("insufficient_quota", "billing", "spend_limit", "spending_limit", "credit")
# Free text only where no provider gives a code: Anthropic's credit/spend-limit messages.
_QUOTA_WORDS = ("spend limit", "spending limit", "credit balance", "billing", "insufficient_quota")
_CONTEXT_CODES = ("context_length_exceeded", "context_window", "string_above_max_length")
#: The error codes of a prompt a provider's content filter refused before generating (Azure
#: OpenAI's 400 ``content_filter``, also forwarded by gateways).
_FILTER_CODES = ("content_filter",)
# Anthropic reports an over-long prompt as a plain invalid_request_error; only its text says so.
_CONTEXT_WORDS = ("prompt is too long", "context window", "context length", "maximum context")

_STATUS_REASONS: dict[int, tuple[str, bool]] = {
    400: ("invalid_request", False),
    401: ("auth", False),
    402: ("quota", False),
    403: ("permission", False),
    404: ("not_found", False),
    408: ("timeout", True),
    409: ("server_error", True),
    413: ("invalid_request", False),
    422: ("invalid_request", False),
    429: ("rate_limited", True),
    504: ("timeout", True),
    529: ("overloaded", True),
}


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        # Plain dicts are case-sensitive; httpx.Headers is not. Fall back to a scan.
        for key, candidate in headers.items():
            if key.lower() == name:
                return candidate
    return value


def _error_codes(body: Any) -> tuple[list[str], str]:
    """The type/code tokens of an error body as sent, and its message. They are lower-cased only
    for matching: a message keeps them as sent, so a key echoed in one is still redacted (the
    redaction is case-sensitive, and a lower-cased key would slip past it)."""
    codes: list[str] = []
    message = ""
    if not isinstance(body, Mapping):
        return codes, str(body) if isinstance(body, str) else ""
    error = body.get("error")
    for holder in (body, error if isinstance(error, Mapping) else {}):
        for key in ("type", "code", "error_code"):
            value = holder.get(key)
            if isinstance(value, str) and value and value != "error":
                codes.append(value)
        if isinstance(holder.get("message"), str):
            message = holder["message"]
    if isinstance(error, str):
        message = error
    return codes, message


def classify_http(status: int, headers: Mapping[str, str], body: Any) -> Failure:
    """Classify an HTTP error response by status, the body's error ``type``/``code`` and the
    ``x-should-retry`` header. ``body`` is the parsed JSON (or text, or None)."""
    shown, text = _error_codes(body)
    codes = [code.lower() for code in shown]
    lowered = text.lower()
    if status in _STATUS_REASONS:
        reason, retryable = _STATUS_REASONS[status]
    elif status >= 500:
        reason, retryable = "server_error", True
    else:
        reason, retryable = "invalid_request", False
    if "overloaded_error" in codes:
        reason, retryable = "overloaded", True
    elif any(q in c for c in codes for q in _QUOTA_CODES) or (
        status in (400, 403, 429) and any(w in lowered for w in _QUOTA_WORDS)
    ):
        reason, retryable = "quota", False
    elif status == 400 and any(c in _FILTER_CODES for c in codes):
        reason, retryable = "content_filter", False
    elif status in (400, 413) and (
        any(k in c for c in codes for k in _CONTEXT_CODES)
        or any(w in lowered for w in _CONTEXT_WORDS)
    ):
        reason = "context_window"
    should_retry = (_header(headers, "x-should-retry") or "").strip().lower()
    if should_retry == "true" and reason != "quota":
        retryable = True
    elif should_retry == "false":
        retryable = False
    kind = f" {shown[0]}" if shown else ""
    detail = f": {text[:300]}" if text else ""
    return Failure(
        reason=reason,
        retryable=retryable,
        http_status=status,
        retry_after_s=parse_retry_after(headers),
        message=f"HTTP {status}{kind}{detail}",
    )


def _finite_non_negative(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


#: The prefixes a retry hint's header may carry: none (the provider's own), and the one a gateway
#: forwards the provider's headers under (LiteLLM: ``llm_provider-retry-after``).
RETRY_AFTER_PREFIXES = ("", "llm_provider-")


def _first_header(headers: Mapping[str, str], name: str) -> str | None:
    """``name``'s value, else the value a gateway forwarded it under."""
    for prefix in RETRY_AFTER_PREFIXES:
        value = _header(headers, prefix + name)
        if value is not None:
            return value
    return None


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms`` beats ``retry-after`` (seconds or an
    HTTP date, relative to ``now``, default the wall clock), each also read under the name a
    gateway forwards it as (:data:`RETRY_AFTER_PREFIXES`). Missing or unparsable -> None."""
    millis = _first_header(headers, "retry-after-ms")
    if millis is not None:
        value = _finite_non_negative(millis.strip())
        if value is not None:
            return value / 1000.0
    raw = _first_header(headers, "retry-after")
    if raw is None or not raw.strip():
        return None
    seconds = _finite_non_negative(raw.strip())
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a zone-less one is taken as such
        return None
    delta = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, delta) if math.isfinite(delta) else None
