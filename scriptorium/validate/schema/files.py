"""Schema files under the prompts root: confined paths, JSON or YAML documents, a stat-keyed cache.

A reference is a path relative to the file that names it. It may not be absolute, carry a URL
scheme, or lead outside the root, lexically (``..``) or through a symlink (checked on the resolved
path). Documents must be JSON data: YAML's extras (dates, non-string keys such as ``on:`` read as
``True``) are refused with a message saying what to quote, rather than silently changed.
"""

from __future__ import annotations

import json
import math
import os
import posixpath
import re
import threading
from typing import Any

from scriptorium._files import ConfinedDir, FileProblem, FileSignature, signature
from scriptorium._loading import FormatProblem, decode_utf8, load_yaml
from scriptorium.errors import ValidationError, translate

__all__ = ["MAX_SCHEMA_BYTES", "SchemaFiles", "base_dir", "check_json_data"]

#: Schema files larger than this are refused.
MAX_SCHEMA_BYTES = 2_000_000

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_SUFFIXES = (".json", ".yaml", ".yml")


def base_dir(relative_to: str | None) -> str:
    """The root-relative directory of a prompt file (``extract/x.prompt.md`` -> ``extract``)."""
    if not relative_to:
        return ""
    return posixpath.dirname(_normalize(relative_to, "", what="prompt path"))


def _normalize(ref: str, directory: str, *, what: str = "schema reference") -> str:
    if not ref or "\x00" in ref:
        raise ValidationError(f"empty or malformed {what} {ref!r}", path=ref)
    if _SCHEME.match(ref) or ref.startswith(("/", "\\")) or ref.startswith("//"):
        raise ValidationError(
            f"{what} {ref!r} must be a relative path inside the prompts directory", path=ref
        )
    joined = posixpath.normpath(posixpath.join(directory, ref.replace("\\", "/")))
    if joined == ".." or joined.startswith("../") or joined.startswith("/"):
        raise ValidationError(f"{what} {ref!r} leads outside the prompts directory", path=ref)
    return "" if joined == "." else joined


class SchemaFiles:
    """Reads schema documents from files under ``root`` (no I/O until the first read)."""

    def __init__(self, root: str | os.PathLike[str] | None) -> None:
        self._dir = None if root is None else ConfinedDir(root)
        # relative path -> (signature of the file it named, its document): the per-run check.
        self._seen: dict[str, tuple[FileSignature, Any]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def relative(ref: str, directory: str) -> str:
        """``ref`` joined to the root-relative ``directory`` and normalized; lexical checks only."""
        return _normalize(ref, directory)

    def load(self, relative: str) -> Any:
        """The document in the root-relative file ``relative``; any failure is ValidationError.

        The file is read the one way every file is read (confined to the root after resolving
        links, a regular file only, never more than :data:`MAX_SCHEMA_BYTES`), so a FIFO or a
        device is refused without blocking, and messages name the relative path only.
        """
        if self._dir is None:
            raise ValidationError(
                f"schema {relative!r} is a file reference, but no prompts root is configured",
                path=relative,
            )
        suffix = posixpath.splitext(relative)[1].lower()
        if suffix not in _SUFFIXES:
            raise ValidationError(
                f"schema {relative!r} must be a .json, .yaml or .yml file", path=relative
            )
        seen = self._seen.get(relative)
        if seen is not None and seen[0] == self._dir.current(relative):
            # The same file version that was resolved, confined and parsed last time: resolving
            # the path again (a realpath per run) would change nothing.
            return seen[1]
        try:
            read = self._dir.read(relative, max_bytes=MAX_SCHEMA_BYTES)
        except FileProblem as err:
            raise ValidationError(f"schema {err}", path=relative) from err
        try:
            text = decode_utf8(read.data)
        except FormatProblem as err:
            raise ValidationError(f"schema {relative!r}: {err}", path=relative) from err
        document = _parse(text, suffix, relative)
        with self._lock:
            self._seen[relative] = (signature(read.stat), document)
        return document


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse(text: str, suffix: str, relative: str) -> Any:
    if suffix == ".json":
        with translate(ValidationError, f"parsing schema {relative!r}", path=relative):
            return json.loads(text, parse_constant=_refuse_constant)
    try:
        document = load_yaml(text)
    except FormatProblem as err:
        raise ValidationError(f"parsing schema {relative!r}: {err}", path=relative) from err
    check_json_data(document, relative)
    return document


def check_json_data(document: Any, source: str | None) -> None:
    """Refuse anything that is not plain JSON data (ValidationError naming the place)."""
    stack: list[tuple[Any, str]] = [(document, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if not isinstance(key, str):
                    raise ValidationError(
                        f"schema {source or '(inline)'}: key {key!r} at {where or '/'} is not a "
                        "string (quote it in YAML)",
                        path=source,
                    )
                stack.append((value, f"{where}/{key}"))
        elif isinstance(item, list):
            stack.extend((value, f"{where}/{i}") for i, value in enumerate(item))
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValidationError(
                f"schema {source or '(inline)'}: non-finite number at {where or '/'}", path=source
            )
        elif item is not None and not isinstance(item, (str, int, float, bool)):
            raise ValidationError(
                f"schema {source or '(inline)'}: {type(item).__name__} value at {where or '/'} "
                "is not JSON data (quote it in YAML)",
                path=source,
            )
