"""Profiles read from a ``profiles/`` directory: ``<name>.yaml`` (or ``<name>.yml``)."""

from __future__ import annotations

import builtins
import os
from pathlib import Path

from scriptorium._files import ConfinedDir, FileProblem, FileSignature, signature
from scriptorium._loading import FormatProblem, decode_utf8, load_reason
from scriptorium._suggest import did_you_mean
from scriptorium.errors import ProfileLoadError, translate
from scriptorium.profile.model import Profile, is_valid_profile_name
from scriptorium.profile.parse import check_profile_name, parse_profile

__all__ = ["MAX_PROFILE_BYTES", "SUFFIXES", "FileRepository"]

#: Accepted file name endings, in the order they are looked for.
SUFFIXES = (".yaml", ".yml")
#: A profile file larger than this is refused: profiles are a handful of settings.
MAX_PROFILE_BYTES = 1 << 20


class FileRepository:
    """Reads ``<root>/<name>.yaml`` or ``.yml`` (both at once is an error), confined to ``root``.

    Parsed profiles are cached per name and reused while the file's size, times and inode are
    unchanged. ``Profile.source`` is the file's absolute path, the base for relative paths in
    ``options`` (a replay cassette). The constructor does no I/O.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._dir = ConfinedDir(root)
        self._cache: dict[str, tuple[str, FileSignature, Profile]] = {}

    @property
    def root(self) -> Path:
        """The ``profiles/`` directory."""
        return self._dir.path

    def get(self, name: str) -> Profile:
        """The profile with this name: ``InvalidRequestError`` for a malformed name (before any path
        is built), ``ProfileLoadError`` when it is missing, outside the root or invalid."""
        check_profile_name(name)
        with translate(ProfileLoadError, f"loading profile {name!r}", profile=name):
            cached = self._cache.get(name)
            if cached is not None:
                relative, version, profile = cached
                if version == self._dir.current(relative):
                    return profile
            relative = self._find(name)
            profile, version = self._load(name, relative)
            self._cache[name] = (relative, version, profile)
            return profile

    def list(self) -> list[str]:
        """Every profile name with a file directly under the root that resolves inside it, sorted."""
        try:
            entries = os.listdir(self._dir.path)
        except (OSError, ValueError):  # ValueError: a NUL in the root
            return []
        names = set()
        for filename in entries:
            for suffix in SUFFIXES:
                name = filename.removesuffix(suffix)
                valid = filename.endswith(suffix) and is_valid_profile_name(name)
                if valid and self._dir.resolves_inside(filename):
                    names.add(name)
        return sorted(names)

    def _find(self, name: str) -> str:
        present = [
            name + suffix
            for suffix in SUFFIXES
            if os.path.lexists(os.path.join(self._dir.path, name + suffix))
        ]
        if len(present) > 1:
            raise ProfileLoadError(
                f"profile {name!r}: both {present[0]} and {present[1]} exist; keep one",
                profile=name,
            )
        return present[0] if present else name + SUFFIXES[0]

    def _listed(self) -> builtins.list[str]:
        """What :meth:`list` finds, or nothing when the directory cannot be read (for a
        suggestion in a not-found message, which must not fail on its own)."""
        try:
            return self.list()
        except OSError:
            return []

    def _load(self, name: str, relative: str) -> tuple[Profile, FileSignature]:
        source = os.path.abspath(os.path.join(self._dir.path, relative))
        try:
            read = self._dir.read(relative, max_bytes=MAX_PROFILE_BYTES)
            text = decode_utf8(read.data)
        except FileProblem as err:
            why = (
                f"not found (looked for {name}.yaml or {name}.yml in {os.path.abspath(self._dir.path)})"
                + did_you_mean(name, self._listed())
                if err.kind == "missing"
                else str(err)
            )
            raise ProfileLoadError(
                f"profile {name!r}: {why}", profile=name, path=source, reason=load_reason(err.kind)
            ) from err
        except FormatProblem as err:
            raise ProfileLoadError(
                f"profile {name!r}: {relative} is {err}", profile=name, path=source
            ) from err
        return parse_profile(text, name=name, source=source), signature(read.stat)
