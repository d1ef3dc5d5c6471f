"""Artifacts read from files under one root directory."""

from __future__ import annotations

import os
from pathlib import Path

from scriptorium._files import ConfinedDir, FileProblem
from scriptorium.artifact.build import (
    DEFAULT_MAX_BYTES,
    check_ref,
    make_artifact,
    resolve_media_type,
)
from scriptorium.artifact.model import Artifact
from scriptorium.errors import ArtifactLoadError, translate

__all__ = ["FileReader"]

_MESSAGES = {
    "missing": "{ref} not found in {root} (references are relative to the artifact root)",
    "outside": "{ref} resolves outside the artifact root",
    "not_file": "{ref} is not a regular file",
    "too_large": "{ref} is larger than {limit} bytes",
}
_REASONS = {"missing": "not_found", "too_large": "too_large"}


class FileReader:
    """Reads artifact references as paths under ``root``.

    Absolute references, ``..`` leading out and symlinks resolving outside the root are refused;
    the size is checked before reading. ``max_bytes`` is the limit when a read names none. The
    constructor does no I/O.
    """

    def __init__(
        self, root: str | os.PathLike[str], *, max_bytes: int | None = DEFAULT_MAX_BYTES
    ) -> None:
        self._dir = ConfinedDir(root)
        self._max_bytes = max_bytes

    @property
    def root(self) -> Path:
        """The directory references resolve under."""
        return self._dir.path

    def read(
        self,
        ref: str,
        *,
        name: str | None = None,
        media_type: str | None = None,
        max_bytes: int | None = None,
    ) -> Artifact:
        """The artifact at ``root/ref`` (``ArtifactLoadError`` with ``artifact`` and ``path``)."""
        label = ref if name is None else name
        if isinstance(ref, str) and os.path.isabs(ref):
            raise ArtifactLoadError(
                f"artifact {label!r}: absolute references are refused; give the path relative "
                f"to the artifact root {os.path.abspath(self._dir.path)} (or choose another root: "
                "Engine(artifact_root=...), --artifact-root DIR)",
                artifact=label,
                path=ref if len(ref) <= 200 else None,
            )
        relative = check_ref(ref, name=label)
        limit = self._max_bytes if max_bytes is None else max_bytes
        with translate(ArtifactLoadError, f"reading artifact {label!r}", artifact=label, path=ref):
            # The type is settled first: a declared type the file cannot have fails without I/O.
            resolved_type = resolve_media_type(relative, media_type, name=label)
            try:
                data = self._dir.read(relative, max_bytes=limit).data
            except FileProblem as err:
                template = _MESSAGES.get(err.kind)
                reason = (
                    str(err)
                    if template is None
                    else template.format(ref=ref, limit=limit, root=os.path.abspath(self._dir.path))
                )
                raise ArtifactLoadError(
                    f"artifact {label!r}: {reason}",
                    artifact=label,
                    path=ref,
                    reason=_REASONS.get(err.kind),
                ) from err
            return make_artifact(label, ref, data, resolved_type)
