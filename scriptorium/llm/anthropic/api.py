"""What scriptorium knows about the Anthropic API itself, as data: its name, where it is, what it
refuses, how much one request or batch may hold, and what it costs. No behaviour and no SDK: the
spec, the adapter and the batch adapter all read it from here."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from scriptorium.llm.batches.port import BatchLimits
from scriptorium.llm.media.limits import MB, MediaLimits
from scriptorium.llm.model import ModelPrice
from scriptorium.llm.pricing import usd_price

__all__ = [
    "BASE_URL_ENV",
    "BATCH_LIMITS",
    "BEDROCK_ERRORS",
    "COUNT_TOKENS_PATH",
    "DEFAULT_BASE_URL",
    "ERROR_STATUS",
    "IGNORED_SETTINGS",
    "KEY_ENV",
    "MEDIA_LIMITS",
    "MESSAGES_PATH",
    "PRICES",
    "PROVIDER",
]

PROVIDER = "anthropic"
DEFAULT_BASE_URL = "https://api.anthropic.com"
#: The key variable a profile usually names, and the SDK's own base-URL variable.
KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
#: Where a Messages body is posted, relative to the base URL.
MESSAGES_PATH = "/v1/messages"
#: The token-counting endpoint: the same prompt, no generation.
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"

#: The current Messages API (version 2026-10-21, the SDK 2.x default) refuses temperature, top_p
#: and top_k at any value: they are left out, and said so.
IGNORED_SETTINGS: tuple[str, ...] = ("temperature", "top_p", "top_k")

#: The HTTP status each error ``type`` stands for, where an error arrives without one: an
#: ``error`` event inside a streamed 200, an errored row of a message batch.
ERROR_STATUS: Mapping[str, int] = MappingProxyType(
    {
        "invalid_request_error": 400,
        "authentication_error": 401,
        "billing_error": 402,
        "permission_error": 403,
        "not_found_error": 404,
        "request_too_large": 413,
        "rate_limit_error": 429,
        "api_error": 500,
        "timeout_error": 504,
        "overloaded_error": 529,
    }
)

#: Amazon Bedrock's error names (its ``x-amzn-errortype`` header, ``:exception-type`` in a stream;
#: lower-cased, without the ``Exception`` suffix), each with the status it comes with and, where
#: the status alone says less, what it stands for (reason, retried).
BEDROCK_ERRORS: Mapping[str, tuple[int, tuple[str, bool] | None]] = MappingProxyType(
    {
        "throttling": (429, ("rate_limited", True)),
        # The model is being brought up: busy, not broken.
        "modelnotready": (429, ("overloaded", True)),
        "serviceunavailable": (503, ("server_error", True)),
        "internalserver": (500, ("server_error", True)),
        "modelerror": (424, ("server_error", True)),
        "modelstreamerror": (424, ("server_error", True)),
        "modeltimeout": (408, ("timeout", True)),
        "validation": (400, None),
        "accessdenied": (403, ("permission", False)),
        # Credentials that are not (or no longer) valid: an auth failure, not a missing grant.
        "unrecognizedclient": (403, ("auth", False)),
        "invalidsignature": (403, ("auth", False)),
        "incompletesignature": (403, ("auth", False)),
        "expiredtoken": (403, ("auth", False)),
        "missingauthenticationtoken": (403, ("auth", False)),
        "resourcenotfound": (404, None),
        "servicequotaexceeded": (400, ("quota", False)),
    }
)

#: 32 MB per request, 100 images, 100 PDF pages, images at most 8000 pixels a side.
MEDIA_LIMITS = MediaLimits(
    provider=PROVIDER,
    kinds=frozenset({"image", "pdf"}),
    max_request_bytes=32 * MB,
    max_images=100,
    max_pdf_pages=100,
    max_image_side=8000,
)

#: Message Batches: 100,000 requests or 256 MB per batch.
BATCH_LIMITS = BatchLimits(100_000, 256 * 1024 * 1024)

# Cache writes are the 5-minute tier (1.25x input); the 1-hour tier (2x input) is derived from the
# input price when a write is reported as 1-hour.
_OPUS_45 = usd_price("5", "25", "6.25", "0.50")
_OPUS_4 = usd_price("15", "75", "18.75", "1.50")
_SONNET_4 = usd_price("3", "15", "3.75", "0.30")
_HAIKU_45 = usd_price("1", "5", "1.25", "0.10")

#: Model name -> price (see ``scriptorium.llm.pricing`` for the table's date and source).
PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {
        "claude-opus-4-8": _OPUS_45,
        "claude-opus-4-7": _OPUS_45,
        "claude-opus-4-6": _OPUS_45,
        "claude-opus-4-5": _OPUS_45,
        "claude-opus-4-1": _OPUS_4,
        "claude-opus-4-0": _OPUS_4,
        "claude-opus-4": _OPUS_4,
        "claude-sonnet-4-6": _SONNET_4,
        "claude-sonnet-4-5": _SONNET_4,
        "claude-sonnet-4-0": _SONNET_4,
        "claude-sonnet-4": _SONNET_4,
        "claude-3-7-sonnet": _SONNET_4,
        "claude-haiku-4-5": _HAIKU_45,
        "claude-3-5-haiku": usd_price("0.80", "4", "1", "0.08"),
        "claude-3-haiku": usd_price("0.25", "1.25", "0.30", "0.03"),
    }
)
