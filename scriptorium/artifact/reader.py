"""The port through which the use case reads artifacts."""

from __future__ import annotations

from typing import Protocol

from scriptorium.artifact.model import Artifact

__all__ = ["Reader"]


class Reader(Protocol):
    """Reads an artifact by reference. Raises ``ArtifactLoadError`` when it is missing, outside the
    reader's root, larger than ``max_bytes``, or not decodable as ``media_type``."""

    def read(
        self,
        ref: str,
        *,
        name: str | None = None,
        media_type: str | None = None,
        max_bytes: int | None = None,
    ) -> Artifact:
        """The artifact behind ``ref``; ``name`` is what the prompt calls it (default: ``ref``)."""
        ...
