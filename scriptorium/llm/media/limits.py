"""One provider's media rules, as data: which kinds it reads and how much of them one request may
hold. Each provider's package says its own (its spec's ``media``); :mod:`.check` applies them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MB", "MediaLimits", "base64_length"]

#: A megabyte as the providers count them.
MB = 1_000_000


def base64_length(size: int) -> int:
    """How many characters the standard base64 of ``size`` bytes takes (padding included)."""
    return 4 * ((size + 2) // 3)


@dataclass(frozen=True)
class MediaLimits:
    """One provider's media rules. ``None`` means no limit is known (the check is skipped)."""

    provider: str
    kinds: frozenset[str]
    #: The whole request body, media base64-encoded, in bytes.
    max_request_bytes: int | None = None
    #: Image parts in one request.
    max_images: int | None = None
    #: PDF pages in one request, all documents together.
    max_pdf_pages: int | None = None
    #: The PDFs' raw bytes in one request, all documents together.
    max_pdf_bytes: int | None = None
    #: Width and height, each, in pixels.
    max_image_side: int | None = None
    #: What to do about a kind it does not take, when something can be done.
    hint: str = ""
    #: Who refuses, in messages (default: "the <provider> API").
    who: str = ""
