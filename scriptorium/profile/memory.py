"""Profiles held in memory: for tests and for embedding without a ``profiles/`` folder."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scriptorium.errors import ProfileLoadError
from scriptorium.profile.model import Profile
from scriptorium.profile.parse import check_profile_name, parse_profile, parse_profile_data

__all__ = ["MemoryRepository"]

ProfileSource = Profile | Mapping[str, Any] | str


class MemoryRepository:
    """Profiles by name, given as :class:`Profile`, as a mapping (what the YAML would hold) or as
    YAML text.

    Mappings and texts go through the same checks as files (secret refusal included) on first
    ``get``, so an invalid one fails where a broken file would. A ``Profile`` is stored under its
    key, its ``name`` set to the key. ``source`` stays as given (None by default): there is no file
    for relative paths in ``options`` to start from.
    """

    def __init__(self, profiles: Mapping[str, ProfileSource] | None = None) -> None:
        self._items: dict[str, ProfileSource] = {}
        for name, item in (profiles or {}).items():
            self.add(name, item)

    def add(self, name: str, profile: ProfileSource) -> None:
        """Store (or replace) a profile, a mapping or a YAML text under ``name``."""
        check_profile_name(name)
        if isinstance(profile, Profile) and profile.name != name:
            profile = profile.model_copy(update={"name": name})
        elif not isinstance(profile, Profile | Mapping | str):
            raise TypeError(f"expected a Profile, mapping or str, got {type(profile).__name__}")
        self._items[name] = profile

    def get(self, name: str) -> Profile:
        """The profile with this name (``InvalidRequestError`` for a malformed name,
        ``ProfileLoadError`` when none is stored or it is invalid)."""
        check_profile_name(name)
        item = self._items.get(name)
        if item is None:
            raise ProfileLoadError(f"profile {name!r}: not found", profile=name, reason="not_found")
        if isinstance(item, str):
            item = parse_profile(item, name=name)
        elif not isinstance(item, Profile):
            item = parse_profile_data(item, name=name)
        self._items[name] = item
        return item

    def list(self) -> list[str]:
        """Every stored name, sorted."""
        return sorted(self._items)
