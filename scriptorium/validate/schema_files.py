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
from pathlib import Path
from typing import Any

import yaml

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
        self._root_arg = root
        self._root: Path | None = None
        self._cache: dict[str, tuple[int, int, Any]] = {}
        # relative path -> (identity of the file it resolved to, its document): the per-run check.
        self._seen: dict[str, tuple[tuple[int, int, int, int], Any]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def relative(ref: str, directory: str) -> str:
        """``ref`` joined to the root-relative ``directory`` and normalized; lexical checks only."""
        return _normalize(ref, directory)

    def load(self, relative: str) -> Any:
        """The document in the root-relative file ``relative``; any failure is ValidationError."""
        seen = self._seen.get(relative)
        if seen is not None and seen[0] == _identity(self._root, relative):
            # The same file (device, inode, mtime, size) that was resolved, confined and parsed
            # last time: resolving the path again (a realpath per run) would change nothing.
            return seen[1]
        root = self._resolved_root(relative)
        with translate(ValidationError, f"reading schema {relative!r}", path=relative):
            real = (root / relative).resolve(strict=True)
            if not real.is_relative_to(root):
                raise ValidationError(
                    f"schema {relative!r} resolves outside the prompts directory", path=relative
                )
            if real.suffix.lower() not in _SUFFIXES:
                raise ValidationError(
                    f"schema {relative!r} must be a .json, .yaml or .yml file", path=relative
                )
            stat = real.stat()
            key = str(real)
            cached = self._cache.get(key)
            if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_size):
                return cached[2]
            if stat.st_size > MAX_SCHEMA_BYTES:
                raise ValidationError(
                    f"schema {relative!r} is larger than {MAX_SCHEMA_BYTES} bytes", path=relative
                )
            text = real.read_bytes().decode("utf-8-sig")
        document = _parse(text, real.suffix.lower(), relative)
        identity = (stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_size)
        with self._lock:
            self._cache[key] = (stat.st_mtime_ns, stat.st_size, document)
            self._seen[relative] = (identity, document)
        return document

    def _resolved_root(self, relative: str) -> Path:
        if self._root is None:
            if self._root_arg is None:
                raise ValidationError(
                    f"schema {relative!r} is a file reference, but no prompts root is configured",
                    path=relative,
                )
            with translate(ValidationError, "resolving the prompts root", path=relative):
                self._root = Path(self._root_arg).resolve(strict=True)
        return self._root


def _identity(root: Path | None, relative: str) -> tuple[int, int, int, int] | None:
    """Device, inode, mtime and size of the file ``relative`` names now (following links)."""
    if root is None:
        return None
    try:
        stat = os.stat(os.path.join(root, relative))
    except (OSError, ValueError):
        return None
    return (stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_size)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse(text: str, suffix: str, relative: str) -> Any:
    if suffix == ".json":
        with translate(ValidationError, f"parsing schema {relative!r}", path=relative):
            return json.loads(text, parse_constant=_refuse_constant)
    with translate(ValidationError, f"parsing schema {relative!r}", path=relative):
        document = yaml.safe_load(text)
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
