"""Media artifacts as read: magic bytes, image dimensions and PDF pages from the bytes alone, and
the refusals a file that is not what its type says gets."""

from __future__ import annotations

from pathlib import Path
from typing import SupportsIndex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium._testing import media
from scriptorium.artifact.files import FileReader
from scriptorium.artifact.media import (
    MEDIA_TYPES,
    image_size,
    is_media,
    media_kind,
    pdf_page_count,
    sniff_media_type,
)
from scriptorium.artifact.memory import MemoryReader
from scriptorium.errors import ArtifactLoadError

SAMPLES = {
    "image/png": media.png(37, 21),
    "image/jpeg": media.jpeg(37, 21),
    "image/gif": media.gif(37, 21),
    "image/webp": media.webp(37, 21),
    "application/pdf": media.pdf(3),
}
EXTENSIONS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "application/pdf": "pdf",
}


@pytest.mark.parametrize("media_type", sorted(SAMPLES))
def test_magic_bytes_name_each_format(media_type: str) -> None:
    """Each format is recognised by its first bytes."""
    assert sniff_media_type(SAMPLES[media_type]) == media_type


@pytest.mark.parametrize(
    ("make", "size"),
    [
        (lambda: media.png(123, 45), (123, 45)),
        (lambda: media.gif(123, 45), (123, 45)),
        (lambda: media.jpeg(123, 45), (123, 45)),
        (lambda: media.webp(123, 45, form="VP8X"), (123, 45)),
        (lambda: media.webp(123, 45, form="VP8L"), (123, 45)),
        (lambda: media.webp(123, 45, form="VP8 "), (123, 45)),
        (lambda: media.png(8000, 1), (8000, 1)),
        (lambda: media.webp(1, 16383, form="VP8X"), (1, 16383)),
        (lambda: media.jpeg(4032, 3024), (4032, 3024)),
    ],
)
def test_each_header_form_gives_the_exact_size(make: object, size: tuple[int, int]) -> None:
    """PNG, GIF, JPEG (SOF after other segments) and the three WebP forms agree with the maker."""
    assert callable(make)
    data = make()
    assert image_size(data, sniff_media_type(data) or "") == size


def test_jpeg_size_skips_segments_and_fill_bytes_before_the_frame() -> None:
    """The SOF is found after APPn segments, a DQT and 0xFF fill bytes."""
    plain = media.jpeg(640, 480)
    dqt = b"\xff\xdb\x00\x05\x00\x01\x02"
    data = plain[:20] + dqt + b"\xff\xff" + plain[20:]
    assert image_size(data, "image/jpeg") == (640, 480)


def test_pdf_pages_are_counted_from_page_objects() -> None:
    """Page objects are counted; the page tree's /Pages node is not a page."""
    assert pdf_page_count(media.pdf(1)) == 1
    assert pdf_page_count(media.pdf(101)) == 101


def test_pdf_pages_fall_back_to_the_page_tree_count() -> None:
    """A PDF whose page objects are compressed away still tells its /Count."""
    data = b"%PDF-1.7\n1 0 obj << /Type /Pages /Count 250 >> endobj\n%%EOF"
    assert pdf_page_count(data) == 250
    assert pdf_page_count(b"%PDF-1.7\n%%EOF") is None


def test_media_types_and_kinds() -> None:
    """Five media types; parameters and case do not matter; text is not media."""
    assert {media_kind(t) for t in MEDIA_TYPES} == {"image", "pdf"}
    assert is_media("IMAGE/PNG; q=1")
    assert not is_media("text/plain")
    assert not is_media("image/svg+xml")
    assert media_kind("application/json") is None


@pytest.mark.parametrize("media_type", sorted(SAMPLES))
def test_a_file_of_another_format_is_refused(media_type: str) -> None:
    """Declared one media type, holding another (or none): ArtifactLoadError naming both."""
    other = "image/gif" if media_type != "image/gif" else "image/png"
    reader = MemoryReader({"f": SAMPLES[other], "t": b"hello"})
    with pytest.raises(
        ArtifactLoadError, match=f"declared {media_type}, but its bytes are {other}"
    ):
        reader.read("f", name="a", media_type=media_type)
    with pytest.raises(ArtifactLoadError, match="no known media format"):
        reader.read("t", name="a", media_type=media_type)


def test_a_truncated_image_header_is_read_without_dimensions() -> None:
    """Right magic bytes are what reading asks; dimensions are the provider check's business,
    and a header too short to give them is left to the provider."""
    data = media.png(4, 4)[:20]
    artifact = MemoryReader({"x.png": data}).read("x.png", name="scan")
    assert artifact.media_type == "image/png"
    assert image_size(data, "image/png") is None


def test_max_bytes_holds_for_media() -> None:
    """A media file over the prompt's max_bytes is refused before anything else."""
    reader = MemoryReader({"doc.pdf": media.pdf(1)})
    with pytest.raises(ArtifactLoadError, match="larger than 100 bytes"):
        reader.read("doc.pdf", name="doc", max_bytes=100)


def test_a_media_artifact_has_no_text() -> None:
    """A read media artifact keeps its bytes and digest, and no text."""
    artifact = MemoryReader({"s.png": SAMPLES["image/png"]}).read("s.png", name="s")
    assert artifact.media_type == "image/png"
    assert artifact.text is None
    assert artifact.data == SAMPLES["image/png"]
    assert "data=" not in repr(artifact)


class _Watched(bytes):
    """Bytes that remember the furthest index any read asked for."""

    furthest: int

    def __getitem__(self, key: SupportsIndex | slice) -> object:  # type: ignore[override]
        if isinstance(key, slice):
            stop = len(self) if key.stop is None else key.stop
            self.furthest = max(getattr(self, "furthest", 0), stop)
        else:
            self.furthest = max(getattr(self, "furthest", 0), int(key) + 1)
        return super().__getitem__(key)


@settings(max_examples=150, deadline=None)
@given(
    media_type=st.sampled_from(sorted(MEDIA_TYPES)),
    cut=st.integers(min_value=0, max_value=64),
    noise=st.binary(max_size=64),
)
def test_header_parsing_never_reads_past_the_data(media_type: str, cut: int, noise: bytes) -> None:
    """A valid header cut short, or followed by noise, is parsed without ever asking for a byte
    beyond the end, and without raising: a size or None."""
    data = _Watched(SAMPLES[media_type][:cut] + noise)
    size = image_size(data, media_type)
    assert getattr(data, "furthest", 0) <= len(data)
    assert size is None or (size[0] >= 0 and size[1] >= 0)
    sniff_media_type(data)
    assert getattr(data, "furthest", 0) <= max(len(data), 1024)


@settings(max_examples=200, deadline=None)
@given(
    media_type=st.sampled_from(sorted(MEDIA_TYPES)),
    head=st.sampled_from(["", *sorted(MEDIA_TYPES)]),
    cut=st.integers(min_value=0, max_value=40),
    data=st.binary(max_size=200),
)
def test_any_bytes_declared_as_media_end_in_an_artifact_or_a_sentinel(
    media_type: str, head: str, cut: int, data: bytes
) -> None:
    """Arbitrary bytes (some starting like a real file) declared as each media type are read or
    refused with ArtifactLoadError; never another exception."""
    content = (SAMPLES[head][:cut] if head else b"") + data
    reader = MemoryReader({"f": content})
    try:
        artifact = reader.read("f", name="a", media_type=media_type)
    except ArtifactLoadError:
        return
    assert artifact.media_type == media_type
    assert sniff_media_type(content) == media_type


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_both_readers_check_media_alike(kind: str, tmp_path: Path) -> None:
    """The file reader and the memory reader accept and refuse the same media bytes."""
    files = {"good.pdf": SAMPLES["application/pdf"], "bad.pdf": SAMPLES["image/png"]}
    reader: FileReader | MemoryReader
    if kind == "file":
        for name, data in files.items():
            (tmp_path / name).write_bytes(data)
        reader = FileReader(tmp_path)
    else:
        reader = MemoryReader(files)
    good = reader.read("good.pdf", name="doc")
    assert (good.media_type, good.size, good.text) == (
        "application/pdf",
        len(files["good.pdf"]),
        None,
    )
    with pytest.raises(ArtifactLoadError, match="declared application/pdf, but its bytes are"):
        reader.read("bad.pdf", name="doc")


# --- the bounded header walk ----------------------------------------------------------------------

SOI = b"\xff\xd8"


def _sof(width: int, height: int) -> bytes:
    """A baseline frame header (SOF0) of ``width`` x ``height``."""
    return b"\xff\xc0\x00\x11\x08" + height.to_bytes(2, "big") + width.to_bytes(2, "big")


def _app(size: int = 0) -> bytes:
    """An APP1 segment carrying ``size`` bytes."""
    return b"\xff\xe1" + (size + 2).to_bytes(2, "big") + b"\x00" * size


@pytest.mark.parametrize(
    "hostile",
    [
        SOI + b"\xff\xd0" * 2_450_000,  # ~4.9 MB of restart markers, no frame ever
        SOI + _app() * 600 + _sof(10, 10),  # the frame header past the segment bound
        SOI + _app(60_000) * 150 + _sof(10, 10),  # the frame header past the byte bound
    ],
    ids=["restart-markers", "too-many-segments", "too-far"],
)
def test_a_jpeg_whose_frame_header_is_not_within_the_bound_is_refused_as_unreadable(
    hostile: bytes,
) -> None:
    """Refused when read (``reason="unreadable"``, a 400 over HTTP), not walked to the end."""
    with pytest.raises(ArtifactLoadError) as caught:
        MemoryReader({"scan.jpg": hostile}).read("scan.jpg", name="scan", media_type="image/jpeg")
    assert caught.value.reason == "unreadable"
    assert "unreadable" in caught.value.message
    assert image_size(hostile, "image/jpeg") is None


def test_a_jpeg_with_a_long_header_within_the_bound_is_read() -> None:
    """Dozens of metadata segments (EXIF, ICC profile chunks, XMP) and long runs of fill bytes
    are what real files have: read, with their size."""
    data = SOI + _app(60_000) * 40 + b"\xff" * 100_000 + _sof(4000, 3000) + b"\x00" * 64
    assert image_size(data, "image/jpeg") == (4000, 3000)
    artifact = MemoryReader({"big.jpg": data}).read(
        "big.jpg", name="photo", media_type="image/jpeg"
    )
    assert artifact.size == len(data)


def test_a_jpeg_cut_before_its_frame_header_still_passes_to_the_provider() -> None:
    """Truncated is not hostile: no size can be read, the provider has the last word."""
    data = SOI + _app(10)
    assert image_size(data, "image/jpeg") is None
    MemoryReader({"cut.jpg": data}).read("cut.jpg", name="scan", media_type="image/jpeg")
