"""One contract for every artifact reader: the file reader and the in-memory one build the same
artifacts and refuse the same references."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from scriptorium.artifact import FileReader, MemoryReader, Reader
from scriptorium.artifact.build import make_artifact
from scriptorium.errors import ArtifactLoadError
from scriptorium.hashing import hash_bytes

ReaderFactory = Callable[[Mapping[str, bytes]], Reader]

REPORT = "# Q3\n\nRevenue grew — 12 %.\n".encode()
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"
FILES: dict[str, bytes] = {
    "report.md": REPORT,
    "docs/notes.txt": b"plain notes",
    "bom.txt": b"\xef\xbb\xbfwith bom",
    "latin1.txt": "caf\xe9".encode("latin-1"),
    "pixel.png": PNG,
    "data.json": b'{"a": 1}',
    "README": b"no extension here",
    "blob.bin": b"\x00\x01",
}


def _file_reader(tmp_path: Path) -> ReaderFactory:
    def build(files: Mapping[str, bytes]) -> Reader:
        root = tmp_path / "artifacts"
        root.mkdir(exist_ok=True)
        for ref, data in files.items():
            path = root / ref
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return FileReader(root)

    return build


def _memory_reader(tmp_path: Path) -> ReaderFactory:
    return lambda files: MemoryReader(dict(files))


@pytest.fixture(params=["file", "memory"])
def reader(request: pytest.FixtureRequest, tmp_path: Path) -> Reader:
    """A reader over :data:`FILES`, once per adapter."""
    factories = {"file": _file_reader, "memory": _memory_reader}
    return factories[request.param](tmp_path)(FILES)


def test_a_text_artifact_carries_text_size_type_and_digest(reader: Reader) -> None:
    """Reading a markdown file gives its text, byte size, media type and sha256 of the raw bytes."""
    artifact = reader.read("report.md", name="document")
    assert artifact.name == "document"
    assert artifact.ref == "report.md"
    assert artifact.media_type == "text/markdown"
    assert artifact.size == len(REPORT)
    assert artifact.sha256 == hash_bytes(REPORT)
    assert artifact.data == REPORT
    assert artifact.text == REPORT.decode()


def test_both_readers_build_the_artifact_make_artifact_builds(reader: Reader) -> None:
    """The shared builder is the single definition of an artifact."""
    expected = make_artifact("docs/notes.txt", "docs/notes.txt", b"plain notes", "text/plain")
    assert reader.read("docs/notes.txt") == expected


def test_the_name_defaults_to_the_reference(reader: Reader) -> None:
    """Without a name the artifact is called by its reference."""
    assert reader.read("docs/notes.txt").name == "docs/notes.txt"


def test_a_byte_order_mark_is_dropped_from_text_but_hashed(reader: Reader) -> None:
    """The BOM is not part of the text, but the digest and size cover the raw bytes."""
    artifact = reader.read("bom.txt")
    assert artifact.text == "with bom"
    assert artifact.size == len(FILES["bom.txt"])
    assert artifact.sha256 == hash_bytes(FILES["bom.txt"])


def test_binary_artifacts_have_no_text(reader: Reader) -> None:
    """A PNG keeps its bytes and gets no text."""
    artifact = reader.read("pixel.png")
    assert artifact.media_type == "image/png"
    assert artifact.text is None
    assert artifact.data == PNG


def test_unknown_extensions_are_octet_streams(reader: Reader) -> None:
    """With no declaration and an unknown extension the type is application/octet-stream."""
    assert reader.read("blob.bin").media_type == "application/octet-stream"
    assert reader.read("README").media_type == "application/octet-stream"


def test_text_that_is_not_utf8_is_refused(reader: Reader) -> None:
    """A textual artifact must be strict UTF-8; the error names the artifact and its path."""
    with pytest.raises(ArtifactLoadError, match="UTF-8") as info:
        reader.read("latin1.txt", name="doc")
    assert info.value.artifact == "doc"
    assert info.value.path == "latin1.txt"


def test_a_missing_artifact_is_a_load_error(reader: Reader) -> None:
    """An unknown reference raises ArtifactLoadError with name and path."""
    with pytest.raises(ArtifactLoadError, match="not found") as info:
        reader.read("nope.txt", name="doc")
    assert (info.value.artifact, info.value.path) == ("doc", "nope.txt")


def test_size_limit_is_inclusive(reader: Reader) -> None:
    """Exactly max_bytes is fine; one byte more is refused."""
    size = len(REPORT)
    assert reader.read("report.md", max_bytes=size).size == size
    with pytest.raises(ArtifactLoadError, match="larger than"):
        reader.read("report.md", max_bytes=size - 1)


@pytest.mark.parametrize(
    ("ref", "declared", "expected"),
    [
        ("report.md", "text/*", "text/markdown"),
        ("data.json", "application/json", "application/json"),
        ("data.json", "*/*", "application/json"),
        ("blob.bin", "application/x-custom", "application/x-custom"),
        ("README", "text/*", "text/plain"),
        ("README", "text/plain", "text/plain"),
    ],
)
def test_declared_media_types(reader: Reader, ref: str, declared: str, expected: str) -> None:
    """A concrete declaration is used as given; a pattern is checked against the extension."""
    assert reader.read(ref, media_type=declared).media_type == expected


@pytest.mark.parametrize(
    ("ref", "declared"),
    [("pixel.png", "text/*"), ("report.md", "image/*"), ("README", "image/*")],
)
def test_a_declared_pattern_the_file_does_not_match_is_refused(
    reader: Reader, ref: str, declared: str
) -> None:
    """``text/*`` does not accept a PNG; a pattern cannot be confirmed without an extension."""
    with pytest.raises(ArtifactLoadError):
        reader.read(ref, media_type=declared)


def test_declaring_text_makes_binary_content_fail_decoding(reader: Reader) -> None:
    """A concrete textual declaration over bytes that are not UTF-8 is refused."""
    with pytest.raises(ArtifactLoadError, match="UTF-8"):
        reader.read("pixel.png", media_type="text/plain")


@pytest.mark.parametrize(
    "ref",
    ["/etc/passwd", "../outside.txt", "docs/../../outside.txt", "a\x00b", "", "C:/x.txt"],
)
def test_references_that_leave_the_root_are_refused(reader: Reader, ref: str) -> None:
    """Absolute, escaping, empty and NUL-bearing references never reach storage."""
    with pytest.raises(ArtifactLoadError):
        reader.read(ref, name="doc")


def test_equivalent_references_read_the_same_artifact(reader: Reader) -> None:
    """``./docs/x`` and ``docs/../docs/x`` are the same file as ``docs/x``, keeping the ref given."""
    plain = reader.read("docs/notes.txt")
    for ref in ("./docs/notes.txt", "docs/../docs/notes.txt"):
        other = reader.read(ref)
        assert other.sha256 == plain.sha256
        assert other.ref == ref
