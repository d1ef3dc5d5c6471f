"""boto3 for the ``bedrock`` provider: imported on first use, one ``bedrock-runtime`` client per
place (endpoint, region, shared profile) and read timeout, its own retries off, and the one
classifier of what botocore raises.

Credentials come from botocore's standard chain (environment, shared profile files, an instance
role); ``options.aws_profile`` picks a shared profile. The secret parts of the credentials found
(the secret access key and the session token) are kept beside the client so every message the
adapter makes is redacted of them, as of a key.
"""

from __future__ import annotations

import importlib
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from scriptorium.errors import LLMGenerateError, describe
from scriptorium.llm.bedrock.api import PROVIDER
from scriptorium.llm.model import Failure
from scriptorium.llm.retry.http import classify_http
from scriptorium.llm.sdk_import import LazySDK

__all__ = ["Place", "Runtime", "classify", "default_factory", "sdk", "secrets_of"]

#: The secret parts of the credentials each place signs with (set when its client is built).
_secrets: dict[Hashable, tuple[str, ...]] = {}


def secrets_of(place: Hashable) -> tuple[str, ...]:
    """The secrets to redact from anything said about a call to ``place``: the secret access key
    and session token its client signs with."""
    return _secrets.get(place, ())


# Bedrock's error names (``Error.Code``, the ``x-amzn-ErrorType`` header): the reason each means
# and whether a retry can help.
_ERRORS: Mapping[str, tuple[str, bool]] = {
    "ThrottlingException": ("rate_limited", True),
    "TooManyRequestsException": ("rate_limited", True),
    "ServiceUnavailableException": ("overloaded", True),
    "ModelNotReadyException": ("overloaded", True),
    "InternalServerException": ("server_error", True),
    "ModelErrorException": ("server_error", True),
    "ModelStreamErrorException": ("server_error", True),
    "ModelTimeoutException": ("timeout", True),
    "ValidationException": ("invalid_request", False),
    "AccessDeniedException": ("permission", False),
    "UnrecognizedClientException": ("auth", False),
    "InvalidSignatureException": ("auth", False),
    "ExpiredTokenException": ("auth", False),
    "IncompleteSignatureException": ("auth", False),
    "MissingAuthenticationTokenException": ("auth", False),
    "ResourceNotFoundException": ("not_found", False),
    "ServiceQuotaExceededException": ("quota", False),
}
_CONTEXT_WORDS = ("too long", "context window", "context length", "too many tokens")


#: The ``boto3`` module, imported once, on first use.
sdk = LazySDK("boto3", provider=PROVIDER, package="boto3", extra="bedrock")


@dataclass(frozen=True)
class Place:
    """Where a call goes: the runtime endpoint (None: the region's own), the region, the shared
    profile, and the read timeout of its client."""

    endpoint: str | None
    region: str | None
    aws_profile: str | None
    read_timeout_s: float


@dataclass(frozen=True)
class Runtime:
    """A ``bedrock-runtime`` client and the secret parts of the credentials it signs with."""

    client: Any
    secrets: tuple[str, ...]

    def close(self) -> None:
        """Close the client's connection pool."""
        self.client.close()


def default_factory(is_async: bool, key: str, slot: Hashable) -> Runtime:
    """The boto3 client of ``slot`` (a :class:`Place`): retries off (scriptorium's own retry loop
    runs), the read timeout of the request. The same client serves async calls (in a thread)."""
    if not isinstance(slot, Place):
        raise TypeError("a bedrock client is built for a Place")
    boto3 = sdk()
    config = importlib.import_module("botocore.config").Config(
        retries={"total_max_attempts": 1, "mode": "standard"},
        connect_timeout=min(10.0, slot.read_timeout_s),
        read_timeout=slot.read_timeout_s,
        user_agent_extra="scriptorium",
    )
    try:
        session = boto3.session.Session(profile_name=slot.aws_profile, region_name=slot.region)
        client = session.client(
            "bedrock-runtime", region_name=slot.region, endpoint_url=slot.endpoint, config=config
        )
        credentials = session.get_credentials()
    except Exception as err:
        failure = classify(err)
        raise LLMGenerateError(
            f"bedrock: {failure.message}", reason=failure.reason, provider=PROVIDER
        ) from err
    secrets: tuple[str, ...] = ()
    if credentials is not None:
        frozen = credentials.get_frozen_credentials()
        secrets = tuple(s for s in (frozen.secret_key, frozen.token) if s)
    _secrets[slot] = secrets
    return Runtime(client, secrets)


def _client_error(err: Any) -> Failure:
    """An API error: by Bedrock's error name when it names one the table knows, else by its
    status as every adapter reads one (the shared HTTP classifier); the status and
    ``Retry-After`` kept either way."""
    response = getattr(err, "response", None) or {}
    error = response.get("Error") or {}
    code = str(error.get("Code") or "")
    message = str(error.get("Message") or "")
    meta = response.get("ResponseMetadata") or {}
    found = meta.get("HTTPStatusCode")
    status = found if isinstance(found, int) else 500
    headers = {str(k).lower(): str(v) for k, v in (meta.get("HTTPHeaders") or {}).items()}
    by_status = classify_http(status, headers, {"message": message})
    named = _ERRORS.get(code)
    if named is None:
        return by_status
    reason, retryable = named
    if reason == "invalid_request" and any(w in message.lower() for w in _CONTEXT_WORDS):
        reason = "context_window"
    shown = f"{code}: {message}" if message else code
    return Failure(
        reason,
        retryable,
        status,
        retry_after_s=by_status.retry_after_s,
        message=f"HTTP {status} {shown}"[:500],
    )


def _urllib3(err: BaseException) -> Failure | None:
    """What the HTTP library under botocore raises while a stream is read (botocore wraps it
    only while the answer is opened): a dropped or reset connection, a read timeout."""
    if isinstance(err, TimeoutError):
        return Failure("timeout", True, message="the request timed out")
    if isinstance(err, OSError):
        return Failure("connection", True, message=describe(err))
    if not type(err).__module__.startswith("urllib3"):
        return None
    urllib3 = importlib.import_module("urllib3.exceptions")
    if isinstance(err, urllib3.ReadTimeoutError | urllib3.ConnectTimeoutError):
        return Failure("timeout", True, message="the request timed out")
    if isinstance(err, urllib3.HTTPError):
        return Failure("connection", True, message=describe(err))
    return None


def classify(err: BaseException) -> Failure:
    """The one translation of what botocore raises into a :class:`Failure`: an API error (also
    one met inside a stream) by Bedrock's error name, else its status; connection failures and
    timeouts; credentials that cannot be found (``config``) or are refused (``auth``)."""
    exceptions = importlib.import_module("botocore.exceptions")
    if isinstance(err, exceptions.ClientError):
        return _client_error(err)
    if isinstance(err, exceptions.NoCredentialsError | exceptions.PartialCredentialsError):
        return Failure(
            "config",
            False,
            message="no AWS credentials were found (set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or options.aws_profile, or run with an instance role)",
        )
    if isinstance(err, exceptions.ProfileNotFound):
        return Failure("config", False, message=f"AWS profile not found ({describe(err)})")
    if isinstance(err, exceptions.NoRegionError):
        return Failure("config", False, message="no AWS region: set options.region or AWS_REGION")
    if isinstance(err, exceptions.ReadTimeoutError | exceptions.ConnectTimeoutError):
        return Failure("timeout", True, message="the request timed out")
    if isinstance(
        err,
        exceptions.EndpointConnectionError
        | exceptions.ConnectionClosedError
        | exceptions.ConnectionError
        | exceptions.ResponseStreamingError
        | exceptions.IncompleteReadError,
    ):
        return Failure("connection", True, message=describe(err))
    broken = _urllib3(err)
    if broken is not None:
        return broken
    if isinstance(err, exceptions.ParamValidationError):
        return Failure("invalid_request", False, message=describe(err))
    if isinstance(err, exceptions.BotoCoreError):
        return Failure("invalid_response", False, message=describe(err))
    return Failure("invalid_response", False, message=describe(err))
