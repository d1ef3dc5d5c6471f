"""What both artifact readers share, so they refuse the same references and build identical
artifacts: reference checks, media type resolution, size limits, decoding and hashing."""

from __future__ import annotations

import mimetypes
import posixpath
import re
from fnmatch import fnmatchcase
from functools import cache

from scriptorium.artifact.media import check_media_bytes
from scriptorium.artifact.model import Artifact, ArtifactContent, ArtifactSource, is_textual
from scriptorium.errors import ArtifactLoadError
from scriptorium.hashing import hash_bytes

__all__ = [
    "DEFAULT_MAX_BYTES",
    "OCTET_STREAM",
    "artifact_from_content",
    "check_ref",
    "check_size",
    "guess_media_type",
    "make_artifact",
    "resolve_media_type",
]

#: The limit applied when the prompt declares no ``max_bytes``: large enough for any document a
#: model can take in, small enough that a wrong reference cannot exhaust memory.
DEFAULT_MAX_BYTES = 32 << 20
OCTET_STREAM = "application/octet-stream"
_MAX_REF_CHARS = 4096
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")

# Types the standard table lacks or that differ between systems; checked first.
_EXTRA_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".log": "text/plain",
    ".rst": "text/x-rst",
}
# A compressed file is its compression, not the type of what it holds.
_ENCODING_TYPES = {
    "gzip": "application/gzip",
    "bzip2": "application/x-bzip2",
    "xz": "application/x-xz",
    "compress": "application/x-compress",
    "br": "application/x-brotli",
}


@cache
def _table() -> mimetypes.MimeTypes:
    # A private table of Python's built-in types only: the global one also reads the system's
    # mime.types, which would make media types (and so prepared runs) differ between machines.
    return mimetypes.MimeTypes()


def _fail(name: str, ref: str, reason: str, kind: str | None = None) -> ArtifactLoadError:
    return ArtifactLoadError(f"artifact {name!r}: {reason}", artifact=name, path=ref, reason=kind)


def check_ref(ref: object, *, name: str) -> str:
    """``ref`` normalised (``a/./b`` -> ``a/b``), or ``ArtifactLoadError`` when it is not a plain
    relative path that stays under the root: empty, absolute, NUL bytes, or ``..`` leading out."""
    shown = ref if isinstance(ref, str) and len(ref) <= 200 else None
    if not isinstance(ref, str) or not ref:
        raise _fail(name, "", "the reference must be a non-empty string")
    if "\x00" in ref or len(ref) > _MAX_REF_CHARS:
        raise ArtifactLoadError(f"artifact {name!r}: malformed reference", artifact=name)
    if ref.startswith(("/", "\\")) or _WINDOWS_DRIVE.match(ref):
        raise ArtifactLoadError(
            f"artifact {name!r}: absolute references are refused", artifact=name, path=shown
        )
    normal = posixpath.normpath(ref)
    if normal == ".." or normal.startswith("../"):
        raise ArtifactLoadError(
            f"artifact {name!r}: the reference leads outside the artifact root",
            artifact=name,
            path=shown,
        )
    return normal


def check_size(size: int, max_bytes: int | None, *, name: str, ref: str) -> None:
    """``ArtifactLoadError`` when ``size`` exceeds ``max_bytes`` (None: no limit)."""
    if max_bytes is not None and size > max_bytes:
        raise _fail(name, ref, f"{ref} is larger than {max_bytes} bytes", "too_large")


def guess_media_type(ref: str) -> str | None:
    """The media type the reference's extension implies, or None when it says nothing."""
    extension = posixpath.splitext(ref)[1].lower()
    if extension in _EXTRA_TYPES:
        return _EXTRA_TYPES[extension]
    media_type, encoding = _table().guess_type(ref, strict=False)
    if encoding is not None:
        return _ENCODING_TYPES.get(encoding, OCTET_STREAM)
    return media_type


def resolve_media_type(ref: str, declared: str | None, *, name: str) -> str:
    """The artifact's media type: a concrete declaration as given; a pattern (``text/*``) checked
    against the extension's type; otherwise the extension's type, else ``application/octet-stream``.

    A ``text/...`` pattern accepts a file whose extension says nothing as ``text/plain`` (strict
    decoding then confirms it is text); other patterns need an extension that matches.
    """
    guessed = guess_media_type(ref)
    if declared is None:
        return guessed or OCTET_STREAM
    declared = declared.strip().lower()
    if "*" not in declared:
        return declared
    if guessed is None:
        if declared == "*/*":
            return OCTET_STREAM
        if declared.startswith("text/") and fnmatchcase("text/plain", declared):
            return "text/plain"
        raise _fail(name, ref, f"cannot tell from its extension whether it is {declared}")
    if not fnmatchcase(guessed, declared):
        raise _fail(name, ref, f"its type is {guessed}, but the prompt declares {declared}")
    return guessed


def make_artifact(
    name: str, ref: str, data: bytes, media_type: str, *, source: ArtifactSource = "file"
) -> Artifact:
    """Build the :class:`Artifact` for ``data``: size and sha256 of the raw bytes, and, for a
    textual type, the text (strict UTF-8, one byte order mark dropped). Media (images, PDF) must
    be what their type says (:func:`~scriptorium.artifact.media.check_media_bytes`)."""
    check_media_bytes(name, ref, data, media_type)
    text = None
    if is_textual(media_type):
        try:
            text = data.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError as err:
            raise _fail(name, ref, f"not valid UTF-8 text (byte {err.start})") from err
    return Artifact(
        name=name,
        ref=ref,
        media_type=media_type,
        size=len(data),
        sha256=hash_bytes(data),
        data=data,
        text=text,
        source=source,
    )


def _base_type(media_type: str) -> str:
    return media_type.split(";", 1)[0].strip().lower()


def _content_media_type(content: ArtifactContent, declared: str | None, *, name: str) -> str:
    """The media type of content given by value, checked against the prompt's declaration as a
    file's would be: the content's own ``media_type`` first, else its ``filename``'s extension,
    else a concrete declaration, else ``text/plain`` for ``str`` data and octet-stream for bytes."""
    ref = content.filename or "the content"
    pattern = None if declared is None else declared.strip().lower()
    if content.media_type is None:
        if content.filename is not None:
            return resolve_media_type(content.filename, pattern, name=name)
        if pattern is not None and "*" not in pattern:
            return pattern
        own = "text/plain" if isinstance(content.data, str) else OCTET_STREAM
        if pattern is None or pattern == "*/*" or fnmatchcase(own, pattern):
            return own
        if fnmatchcase("text/plain", pattern):
            # As for a file whose extension says nothing: strict decoding confirms it is text.
            return "text/plain"
        raise _fail(name, ref, f"cannot tell whether it is {pattern}: give its media_type")
    own = content.media_type.strip().lower()
    if pattern is None:
        return own
    matches = (
        fnmatchcase(_base_type(own), pattern)
        if "*" in pattern
        else _base_type(own) == _base_type(pattern)
    )
    if not matches:
        raise _fail(name, ref, f"its type is {own}, but the prompt declares {pattern}")
    return own


def artifact_from_content(
    content: ArtifactContent,
    *,
    name: str,
    media_type: str | None = None,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
) -> Artifact:
    """The :class:`Artifact` for content given by value, through the checks a file gets: the
    declared ``media_type`` (a pattern such as ``text/*`` or a concrete type), ``max_bytes`` and
    strict text decoding; ``ArtifactLoadError`` when one fails. Hashed like a file's bytes."""
    if not isinstance(content, ArtifactContent):
        raise ArtifactLoadError(f"artifact {name!r}: expected ArtifactContent", artifact=name)
    resolved = _content_media_type(content, media_type, name=name)
    ref = content.filename or ""
    if isinstance(content.data, str):
        if max_bytes is not None and len(content.data) > max_bytes:
            # A str never has fewer UTF-8 bytes than characters: refuse before encoding it.
            check_size(len(content.data), max_bytes, name=name, ref=ref or "the content")
        try:
            data = content.data.encode("utf-8")
        except UnicodeEncodeError as err:
            raise _fail(name, ref, "the text cannot be encoded as UTF-8") from err
    else:
        data = content.data
    check_size(len(data), max_bytes, name=name, ref=ref or "the content")
    return make_artifact(name, ref, data, resolved, source="value")
