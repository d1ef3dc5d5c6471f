"""Media artifacts: which types are binary media, and what their bytes say about themselves.

Everything here reads the file header by hand (no image or PDF library): the magic bytes that
identify the format, image dimensions, and a PDF's page count. Every read goes through
:func:`_take`, which never looks past the end of the data: a truncated or hostile file gives
``None`` (or a refusal), never an ``IndexError`` or a read beyond the buffer.

The one header that is walked, a JPEG's segments up to its frame header, is walked a bounded
distance: at most :data:`MAX_HEADER_SEGMENTS` segments within the first :data:`MAX_HEADER_BYTES`
bytes (a camera's file reaches its frame header within a few dozen). A file that has not shown its
frame header by then (a start-of-image followed by megabytes of restart markers, say) is refused as
unreadable when it is read (:func:`check_media_bytes`) instead of being walked to its end, which on
a hostile file costs seconds per megabyte of CPU.
"""

from __future__ import annotations

import re
from typing import Literal

from scriptorium.errors import ArtifactLoadError

__all__ = [
    "IMAGE_TYPES",
    "MAX_HEADER_BYTES",
    "MAX_HEADER_SEGMENTS",
    "MEDIA_TYPES",
    "PDF_TYPE",
    "MediaKind",
    "base_type",
    "check_media_bytes",
    "header_walk_gives_up",
    "image_size",
    "is_media",
    "media_kind",
    "pdf_page_count",
    "sniff_media_type",
]

MediaKind = Literal["image", "pdf"]

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
PDF_TYPE = "application/pdf"
#: The media types scriptorium sends to a model as content blocks rather than as text.
MEDIA_TYPES = IMAGE_TYPES | {PDF_TYPE}

# A PDF reader looks for the header within the first 1024 bytes (some writers put junk first).
_PDF_HEADER_WINDOW = 1024
#: The most segments a JPEG header walk reads before giving up on finding the frame header.
MAX_HEADER_SEGMENTS = 512
#: How far into a JPEG the frame header must start for the walk to find it.
MAX_HEADER_BYTES = 8 * 1024 * 1024


def base_type(media_type: str) -> str:
    """``media_type`` without parameters, lowercased (``image/PNG; q=1`` -> ``image/png``)."""
    return media_type.split(";", 1)[0].strip().lower()


def is_media(media_type: str) -> bool:
    """Whether ``media_type`` is one of the binary media types (images and PDF)."""
    return base_type(media_type) in MEDIA_TYPES


def media_kind(media_type: str) -> MediaKind | None:
    """``"image"``, ``"pdf"``, or None for anything that is not media."""
    base = base_type(media_type)
    if base in IMAGE_TYPES:
        return "image"
    if base == PDF_TYPE:
        return "pdf"
    return None


class _Short(Exception):
    """The data ends before a field the parser needs."""


class _GaveUp(Exception):
    """The header walk reached its bound before the field it looks for."""


def _take(data: bytes, offset: int, size: int) -> bytes:
    """``size`` bytes at ``offset``, or :class:`_Short` when the data ends first. The only way the
    parsers read, so none of them can look past the end."""
    end = offset + size
    if offset < 0 or size < 0 or end > len(data):
        raise _Short
    return data[offset:end]


def _u16be(data: bytes, offset: int) -> int:
    return int.from_bytes(_take(data, offset, 2), "big")


def _u16le(data: bytes, offset: int) -> int:
    return int.from_bytes(_take(data, offset, 2), "little")


def _u24le(data: bytes, offset: int) -> int:
    return int.from_bytes(_take(data, offset, 3), "little")


def _u32be(data: bytes, offset: int) -> int:
    return int.from_bytes(_take(data, offset, 4), "big")


def sniff_media_type(data: bytes) -> str | None:
    """The media type the magic bytes announce (one of :data:`MEDIA_TYPES`), or None."""
    head = data[:16]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    if b"%PDF-" in data[:_PDF_HEADER_WINDOW]:
        return PDF_TYPE
    return None


# --- image dimensions -----------------------------------------------------------------------------


def _png_size(data: bytes) -> tuple[int, int]:
    # The first chunk must be IHDR: length (4), type (4), width (4), height (4).
    if _take(data, 12, 4) != b"IHDR":
        raise _Short
    return _u32be(data, 16), _u32be(data, 20)


def _gif_size(data: bytes) -> tuple[int, int]:
    return _u16le(data, 6), _u16le(data, 8)


def _webp_size(data: bytes) -> tuple[int, int]:
    chunk = _take(data, 12, 4)
    if chunk == b"VP8X":  # extended: 24-bit canvas width-1 and height-1
        return _u24le(data, 24) + 1, _u24le(data, 27) + 1
    if chunk == b"VP8L":  # lossless: signature 0x2f, then 14-bit width-1 and height-1
        if _take(data, 20, 1) != b"\x2f":
            raise _Short
        bits = int.from_bytes(_take(data, 21, 4), "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 ":  # lossy: a key frame's start code, then 14-bit width and height
        if _take(data, 23, 3) != b"\x9d\x01\x2a":
            raise _Short
        return _u16le(data, 26) & 0x3FFF, _u16le(data, 28) & 0x3FFF
    raise _Short


# Start-of-frame markers carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) share the range.
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# Markers without a length field: TEM, RST0-7, SOI, EOI.
_JPEG_STANDALONE = frozenset({0x01, *range(0xD0, 0xDA)})


# Fill bytes before a marker code: any run of 0xFF, skipped in one step however long.
_FILL = re.compile(rb"\xff+")


def _jpeg_size(data: bytes) -> tuple[int, int]:
    offset = 2  # after SOI
    for _ in range(MAX_HEADER_SEGMENTS):
        fill = _FILL.match(data, offset)
        if fill is None:
            raise _Short
        offset = fill.end()
        if offset >= MAX_HEADER_BYTES:
            raise _GaveUp
        marker = _take(data, offset, 1)[0]
        offset += 1
        if marker in _JPEG_SOF:
            # length (2), precision (1), height (2), width (2)
            return _u16be(data, offset + 5), _u16be(data, offset + 3)
        if marker == 0xD9 or marker == 0xDA:  # end of image, or scan data before any frame
            raise _Short
        if marker in _JPEG_STANDALONE:
            continue
        length = _u16be(data, offset)
        if length < 2:
            raise _Short
        offset += length  # always forward: the loop ends at the data's end at the latest
    raise _GaveUp


_SIZERS = {
    "image/png": _png_size,
    "image/gif": _gif_size,
    "image/webp": _webp_size,
    "image/jpeg": _jpeg_size,
}


def image_size(data: bytes, media_type: str) -> tuple[int, int] | None:
    """``(width, height)`` in pixels from the header of an image of ``media_type``, or None when
    the header is truncated or malformed (or the type is not an image)."""
    sizer = _SIZERS.get(base_type(media_type))
    if sizer is None:
        return None
    try:
        return sizer(data)
    except (_Short, _GaveUp):
        return None


def header_walk_gives_up(data: bytes, media_type: str) -> bool:
    """Whether reading the size of an image of ``media_type`` from ``data`` reaches the walk's
    bound (see the module) instead of an answer: such a file is refused as unreadable."""
    sizer = _SIZERS.get(base_type(media_type))
    if sizer is None:
        return False
    try:
        sizer(data)
    except _GaveUp:
        return True
    except _Short:
        return False
    return False


# --- PDF pages ------------------------------------------------------------------------------------

# A page object's dictionary says /Type /Page (and /Pages for the tree's inner nodes).
_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z0-9_])")
_COUNT = re.compile(rb"/Count\s+(\d{1,9})")


def pdf_page_count(data: bytes) -> int | None:
    """The number of pages of a PDF, read without a PDF library, or None when it cannot be told.

    Page objects are counted where they stand in the file. A PDF that keeps its objects in
    compressed object streams shows none; then the page tree's largest ``/Count`` is used. Both
    can over-count a file that holds superseded revisions (incremental updates), which errs on
    the side of refusing before the call rather than after it.
    """
    pages = sum(1 for _ in _PAGE.finditer(data))
    if pages:
        return pages
    counts = [int(m.group(1)) for m in _COUNT.finditer(data)]
    return max(counts) if counts else None


# --- the check an artifact gets when it is read ---------------------------------------------------


def check_media_bytes(name: str, ref: str, data: bytes, media_type: str) -> None:
    """``ArtifactLoadError`` unless the magic bytes of ``data`` agree with its declared media
    ``media_type``, and, for an image whose header is walked, the walk finds what it looks for
    within its bound (``reason="unreadable"`` otherwise). Other types pass unchecked.

    Only the format is checked here. Whether a provider takes the image (its dimensions) is a
    question about the request, asked in ``prepare`` (:func:`scriptorium.llm.media.check_media`);
    a header too short to give dimensions passes both, and the provider has the last word.
    """
    base = base_type(media_type)
    if base not in MEDIA_TYPES:
        return
    where = ref or "the content"
    found = sniff_media_type(data)
    if found != base:
        what = "no known media format" if found is None else found
        raise ArtifactLoadError(
            f"artifact {name!r}: {where} is declared {base}, but its bytes are {what}",
            artifact=name,
            path=ref or None,
        )
    if header_walk_gives_up(data, base):
        raise ArtifactLoadError(
            f"artifact {name!r}: {where} is unreadable as {base}: no frame header within "
            f"{MAX_HEADER_SEGMENTS} segments or {MAX_HEADER_BYTES:,} bytes",
            artifact=name,
            path=ref or None,
            reason="unreadable",
        )
