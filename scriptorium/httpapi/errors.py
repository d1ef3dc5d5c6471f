"""How a failure looks over HTTP: the status for each sentinel, and the error body.

Pure functions, no web framework: the table is the public contract of the HTTP API, and it is
tested on its own. Errors are told apart by class and by their structured fields (``reason``),
never by message text.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

import scriptorium.errors as errors
from scriptorium.redaction import public_message

__all__ = [
    "CONFIGURATION_CODES",
    "ApiError",
    "error_body",
    "retry_after_header",
    "status_for",
]

#: The ``LLMGenerateError`` reasons that say "try again later" (503 with ``Retry-After``).
_BUSY_REASONS = frozenset({"rate_limited", "overloaded", "quota"})
#: The ``LLMGenerateError`` reasons that are the server's own set-up, not the provider's answer.
_CONFIG_REASONS = frozenset({"config", "provider_unavailable"})
#: When the provider named no wait, what ``Retry-After`` suggests (seconds).
DEFAULT_RETRY_AFTER_S = 5

#: The error codes a 500 may carry besides ``internal``: the server's configuration is wrong (a
#: broken prompt or profile file, a schema that does not load, a key variable unset, a provider SDK
#: missing), so only its operator can fix it.
CONFIGURATION_CODES = frozenset(
    {"prompt_load", "profile_load", "validation", "api_key_env_missing", "api_key_required"}
)

# The fields of the sentinels that may travel in an error body. Every field a sentinel carries is
# structured and holds no secret, but the body is a public contract: it lists them by name.
_SAFE_FIELDS = (
    "reason",
    "field",
    "env_var",
    "retry_after_s",
    "http_status",
    "attempts",
    "elapsed_s",
    "provider",
    "model",
    "prompt_id",
    "profile",
    "path",
    "artifact",
    "section",
    "issues",
    "fallbacks",
    "usage",
)


class ApiError(Exception):
    """A failure of the HTTP layer itself (not of a run): a body too large, an unknown route, a
    missing token. Carries its status and code; rendered like the sentinels."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: Mapping[str, str] | None = None,
        **fields: Any,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})
        self.fields = fields


def _load_status(err: errors.PromptLoadError | errors.ProfileLoadError) -> int:
    # Missing is the caller's mistake; a file that is there but broken is the operator's.
    return 404 if err.reason == "not_found" else 500


def status_for(err: errors.ScriptoriumError) -> int:
    """The HTTP status of a sentinel raised by ``prepare`` or ``run``."""
    if isinstance(err, errors.LLMGenerateError):
        reason = err.reason
        if reason in _CONFIG_REASONS:
            return 500
        if reason in _BUSY_REASONS:
            return 503
        if reason == "timeout":
            return 504
        return 502
    if isinstance(err, errors.PromptLoadError | errors.ProfileLoadError):
        return _load_status(err)
    if isinstance(err, errors.ArtifactLoadError):
        # An artifact over its declared size limit is "payload too large"; any other artifact
        # problem (missing, undecodable, outside the root) is the request's fault.
        return 413 if getattr(err, "reason", None) == "too_large" else 400
    if isinstance(err, errors.InvalidRequestError | errors.ProfileRequiredError):
        return 400
    if isinstance(err, errors.PromptRenderError | errors.OutputInvalidError):
        return 422
    # validation, api_key_env_missing, api_key_required: the server's set-up is wrong.
    return 500


def retry_after_header(err: errors.ScriptoriumError) -> dict[str, str]:
    """``Retry-After`` (whole seconds, rounded up) for a 503; nothing for any other status."""
    if status_for(err) != 503:
        return {}
    wait = getattr(err, "retry_after_s", None)
    seconds = DEFAULT_RETRY_AFTER_S if wait is None else max(1, math.ceil(wait))
    return {"Retry-After": str(seconds)}


def _retryable(err: errors.ScriptoriumError) -> bool:
    if isinstance(err, errors.LLMGenerateError):
        # A 503 always invites a retry (after Retry-After), whatever the client decided.
        return bool(err.retryable) or status_for(err) == 503
    return False


def error_body(
    err: errors.ScriptoriumError | ApiError,
    request_id: str,
    *,
    secrets: Iterable[str | None] = (),
    roots: Iterable[str] = (),
) -> dict[str, Any]:
    """``{"error": {"code", "message", "request_id", "retryable", ...safe fields}}``.

    ``secrets`` (a key the request carried) are scrubbed from the message once more: the sentinels
    never hold one, but the body is the last door before the network. ``roots`` are the server's
    directories (absolute): a message naming one shows it as ``.`` instead.
    """
    if isinstance(err, ApiError):
        fields = {k: v for k, v in err.fields.items() if v is not None}
        retryable = bool(fields.pop("retryable", False))
        code, message = err.code, err.message
    else:
        attrs = err.to_dict()  # the JSON form of every field
        fields = {k: attrs[k] for k in _SAFE_FIELDS if k in attrs}
        if isinstance(fields.get("path"), str) and os.path.isabs(fields["path"]):
            # Where the server keeps its files is not the caller's business.
            del fields["path"]
        if fields.get("fallbacks"):
            # Each profile left carries its own error's message: the same door, the same scrub.
            fields["fallbacks"] = [
                {**left, "message": public_message(left["message"], roots=roots, secrets=secrets)}
                for left in fields["fallbacks"]
            ]
        retryable = _retryable(err)
        code, message = err.code, err.message
    body: dict[str, Any] = {
        "code": code,
        "message": public_message(message, roots=roots, secrets=secrets),
        "request_id": request_id,
        "retryable": retryable,
        **fields,
    }
    return {"error": body}
