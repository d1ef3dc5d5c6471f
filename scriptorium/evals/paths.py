"""Where a path written in a tests file leads (an artifact's, a dataset's): relative to the tests
file's folder, inside the project."""

from __future__ import annotations

import os
import posixpath

from scriptorium.evals.model import TestsFile

__all__ = ["artifact_path"]


def artifact_path(tests: TestsFile, ref: str) -> str:
    """Where a path in a tests file (a case's artifact, a dataset) leads, relative to the project
    (``prompts/`` is inside it): resolved against the tests file's folder, lexically.
    ``ValueError`` for an absolute path or one that climbs out of the project (links are caught
    when the file is read)."""
    text = ref.replace("\\", "/")
    if text.startswith("/") or os.path.isabs(ref) or (len(text) > 1 and text[1] == ":"):
        raise ValueError("a path in a tests file is relative to it, not absolute")
    folder = posixpath.dirname(posixpath.join("prompts", tests.source))
    relative = posixpath.normpath(posixpath.join(folder, text))
    if relative in ("", ".", "..") or relative.startswith("../"):
        raise ValueError("the path leads outside the project")
    return relative
