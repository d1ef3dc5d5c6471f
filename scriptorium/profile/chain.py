"""A profile's fallback chain: the profiles a run on it falls back to, in the order they are tried.

The chain of a profile is each name of its ``fallback`` list followed by that profile's own chain,
depth first, each profile once (a profile reached again by another branch keeps its first place).
A name that does not load, or a branch that comes back to a profile on its own path (``a`` falls
back to ``b``, which falls back to ``a``), makes the chain unusable: ``ProfileLoadError`` naming
the profile that was loaded and the broken link, raised when that profile is loaded for a run and
reported by ``check``.

Only the profiles are read here, through whatever loads them (a repository's ``get``): whether
each one can also be *prepared* (its key variable set, its provider known) is found when the run
reaches it.
"""

from __future__ import annotations

from collections.abc import Callable

from scriptorium.errors import ProfileLoadError, ScriptoriumError
from scriptorium.profile.model import Profile

__all__ = ["fallback_chain"]


def fallback_chain(profile: Profile, load: Callable[[str], Profile]) -> tuple[Profile, ...]:
    """The profiles after ``profile`` in its chain, in the order a run tries them (empty when it
    names no fallback). ``ProfileLoadError`` when a name does not load or the chain loops."""
    if not profile.fallback:
        return ()
    found: list[Profile] = []
    seen = {profile.name}

    def follow(current: Profile, path: tuple[str, ...]) -> None:
        for name in current.fallback:
            if name in path:
                loop = " -> ".join((*path, name))
                raise ProfileLoadError(
                    f"profile {profile.name!r}: its fallback chain loops ({loop}); each profile "
                    "may be tried once",
                    profile=profile.name,
                    path=profile.source,
                    reason="invalid",
                )
            if name in seen:
                continue  # reached earlier through another branch: tried there
            seen.add(name)
            try:
                loaded = load(name)
            except ScriptoriumError as err:
                reason = err.reason if isinstance(err, ProfileLoadError) else None
                raise ProfileLoadError(
                    f"profile {profile.name!r}: fallback {name!r} does not load ({err.message})",
                    profile=profile.name,
                    path=profile.source,
                    reason=reason or "invalid",
                ) from err
            found.append(loaded)
            follow(loaded, (*path, name))

    follow(profile, (profile.name,))
    return tuple(found)
