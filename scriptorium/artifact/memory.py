"""Artifacts held in memory: for tests and for callers that already have the content."""

from __future__ import annotations

from collections.abc import Mapping

from scriptorium.artifact.build import (
    DEFAULT_MAX_BYTES,
    check_ref,
    check_size,
    make_artifact,
    resolve_media_type,
)
from scriptorium.artifact.model import Artifact
from scriptorium.errors import ArtifactLoadError

__all__ = ["MemoryReader"]


class MemoryReader:
    """Serves artifacts from a mapping of reference -> content (``str`` is stored as UTF-8).

    It refuses what :class:`~scriptorium.artifact.files.FileReader` refuses (absolute references,
    ``..`` leading out, oversize content, undecodable text, a declared type the extension
    contradicts) and builds the same :class:`Artifact` for the same bytes. References are compared
    after normalising ``./`` and ``a/../`` segments, as a path would be.
    """

    def __init__(
        self,
        files: Mapping[str, bytes | str] | None = None,
        *,
        max_bytes: int | None = DEFAULT_MAX_BYTES,
    ) -> None:
        self._files: dict[str, bytes] = {}
        self._max_bytes = max_bytes
        for ref, content in (files or {}).items():
            self.add(ref, content)

    def add(self, ref: str, content: bytes | str) -> None:
        """Store (or replace) the content behind ``ref``."""
        normal = check_ref(ref, name=ref)
        self._files[normal] = content.encode("utf-8") if isinstance(content, str) else content

    def read(
        self,
        ref: str,
        *,
        name: str | None = None,
        media_type: str | None = None,
        max_bytes: int | None = None,
    ) -> Artifact:
        """The artifact stored under ``ref`` (``ArtifactLoadError`` with ``artifact`` and ``path``)."""
        label = ref if name is None else name
        normal = check_ref(ref, name=label)
        resolved_type = resolve_media_type(normal, media_type, name=label)
        data = self._files.get(normal)
        if data is None:
            raise ArtifactLoadError(
                f"artifact {label!r}: {ref} not found", artifact=label, path=ref, reason="not_found"
            )
        limit = self._max_bytes if max_bytes is None else max_bytes
        check_size(len(data), limit, name=label, ref=ref)
        return make_artifact(label, ref, data, resolved_type)
