"""What scriptorium knows about the OpenAI API itself, as data: its name, where it is, what it
refuses, how much one request or batch may hold, what it costs, and what an OpenAI-compatible
server (any other endpoint) is assumed to take. No SDK: the spec, the adapter and the batch
adapter all read it from here."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from scriptorium.artifact.media import MediaKind
from scriptorium.errors import InvalidRequestError
from scriptorium.llm.batches.port import BatchLimits
from scriptorium.llm.media.limits import MB, MediaLimits
from scriptorium.llm.model import ModelPrice
from scriptorium.llm.pricing import usd_price

__all__ = [
    "API_VALUES",
    "BASE_URL_ENV",
    "BATCH_LIMITS",
    "CHAT_PATH",
    "DEFAULT_BASE_URL",
    "IGNORED_SETTINGS",
    "KEY_ENV",
    "MEDIA_LIMITS",
    "MEDIA_OPTION_VALUES",
    "PRICES",
    "PROVIDER",
    "RESPONSES_COUNT_PATH",
    "RESPONSES_ONLY",
    "RESPONSES_ONLY_DATE",
    "RESPONSES_PATH",
    "is_openai_endpoint",
    "openai_limits",
]

PROVIDER = "openai"
#: The base URL *including* ``/v1``: compatible servers are named the same way.
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: The key variable a profile usually names, and the SDK's own base-URL variable.
KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
#: Where a Chat Completions body is posted, under the base URL.
CHAT_PATH = "/chat/completions"
#: Where a Responses API body is posted, and where its input tokens are counted.
RESPONSES_PATH = "/responses"
RESPONSES_COUNT_PATH = "/responses/input_tokens"

#: ``options.api``: which of OpenAI's two generation APIs a profile's requests travel on.
API_VALUES = ("chat", "responses", "auto")
RESPONSES_ONLY_DATE = "2026-11"
#: The models that answer only on the Responses API (Chat Completions answers 404 "not a chat
#: model"), as name patterns (table of 2026-11, from OpenAI's model pages): the pro models, the
#: codex models and the deep-research models, dated snapshots included. ``options.api: auto``
#: sends these to the Responses API and every other model to Chat Completions.
RESPONSES_ONLY: tuple[str, ...] = (
    "*-pro",
    "*-pro-20??-??-??",
    "*-codex",
    "*-codex-*",
    "codex-*",
    "*-deep-research",
    "*-deep-research-*",
)

#: Chat Completions has no top_k and refuses unknown parameters.
IGNORED_SETTINGS: tuple[str, ...] = ("top_k",)


def is_openai_endpoint(endpoint: str | None) -> bool:
    """Whether ``endpoint`` is OpenAI's own API (no endpoint means it), not a compatible server."""
    return endpoint is None or "://api.openai.com" in endpoint


#: 50 MB per request, 500 images, 100 PDF pages and 32 MB of PDFs, 8000 pixels a side.
MEDIA_LIMITS = MediaLimits(
    provider=PROVIDER,
    kinds=frozenset({"image", "pdf"}),
    max_request_bytes=50 * MB,
    max_images=500,
    max_pdf_pages=100,
    max_pdf_bytes=32 * MB,
    max_image_side=8000,
)
#: ``options.media`` values an OpenAI-compatible profile may list.
MEDIA_OPTION_VALUES: tuple[MediaKind, ...] = ("image", "pdf")


def openai_limits(
    endpoint: str | None, options: Mapping[str, Any], *, profile: str | None = None
) -> MediaLimits:
    """OpenAI's rules; at a non-default endpoint (an OpenAI-compatible server) only the kinds its
    profile lists in ``options.media`` (``image``, ``pdf``; none when absent), within OpenAI's
    limits."""
    if is_openai_endpoint(endpoint):
        return MEDIA_LIMITS
    declared = options.get("media", [])
    if isinstance(declared, str):
        declared = [declared]
    if not isinstance(declared, list | tuple) or not all(
        item in MEDIA_OPTION_VALUES for item in declared
    ):
        raise InvalidRequestError(
            "options.media must be a list of 'image' and 'pdf' (what the server accepts)",
            profile=profile,
            field="options.media",
        )
    return MediaLimits(
        provider="openai-compatible",
        kinds=frozenset(declared),
        max_request_bytes=MEDIA_LIMITS.max_request_bytes,
        max_images=MEDIA_LIMITS.max_images,
        max_pdf_pages=MEDIA_LIMITS.max_pdf_pages,
        max_pdf_bytes=MEDIA_LIMITS.max_pdf_bytes,
        max_image_side=MEDIA_LIMITS.max_image_side,
        hint="list what the server accepts in the profile's options.media",
        who="this OpenAI-compatible server",
    )


#: Batch API: 50,000 requests or a 200 MB input file per batch.
BATCH_LIMITS = BatchLimits(50_000, 200 * 1024 * 1024)

#: Model name -> price (see ``scriptorium.llm.pricing`` for the table's date and source). OpenAI
#: bills no premium for writing its automatic cache, so ``cache_write`` is the input price.
PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {
        "gpt-5": usd_price("1.25", "10", "1.25", "0.125"),
        "gpt-5-mini": usd_price("0.25", "2", "0.25", "0.025"),
        "gpt-5-nano": usd_price("0.05", "0.40", "0.05", "0.005"),
        "gpt-4.1": usd_price("2", "8", "2", "0.50"),
        "gpt-4.1-mini": usd_price("0.40", "1.60", "0.40", "0.10"),
        "gpt-4.1-nano": usd_price("0.10", "0.40", "0.10", "0.025"),
        "gpt-4o": usd_price("2.50", "10", "2.50", "1.25"),
        # The first snapshot kept its launch price.
        "gpt-4o-2024-05-13": usd_price("5", "15", "5", "5"),
        "gpt-4o-mini": usd_price("0.15", "0.60", "0.15", "0.075"),
        "o1": usd_price("15", "60", "15", "7.50"),
        "o1-mini": usd_price("1.10", "4.40", "1.10", "0.55"),
        "o3": usd_price("2", "8", "2", "0.50"),
        "o3-mini": usd_price("1.10", "4.40", "1.10", "0.55"),
        "o4-mini": usd_price("1.10", "4.40", "1.10", "0.275"),
    }
)
