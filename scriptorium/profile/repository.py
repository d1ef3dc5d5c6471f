"""The port through which the use case reads profiles."""

from __future__ import annotations

from typing import Protocol

from scriptorium.profile.model import Profile

__all__ = ["Repository"]


class Repository(Protocol):
    """Where profiles come from. ``get`` raises ``ProfileLoadError`` for a missing or invalid one."""

    def get(self, name: str) -> Profile:
        """The profile with this name."""
        ...

    def list(self) -> list[str]:
        """Every profile name, sorted."""
        ...
