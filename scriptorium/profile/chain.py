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

from collections.abc import Callable, Iterator

from scriptorium.errors import ProfileLoadError, ScriptoriumError
from scriptorium.profile.model import Profile

__all__ = ["MAX_CHAIN", "fallback_chain"]

#: The most profiles a fallback chain may hold after its first: a longer chain is refused when it
#: is loaded (a run through that many providers is a mistake, and each one waits its timeout).
MAX_CHAIN = 100


def fallback_chain(profile: Profile, load: Callable[[str], Profile]) -> tuple[Profile, ...]:
    """The profiles after ``profile`` in its chain, in the order a run tries them (empty when it
    names no fallback). ``ProfileLoadError`` when a name does not load, the chain loops, or it
    holds more than :data:`MAX_CHAIN` profiles.

    Walked with a stack of its own, not by recursion, so no depth of chain reaches Python's
    recursion limit, and each profile is loaded once: the time is linear in the chain."""
    if not profile.fallback:
        return ()
    found: list[Profile] = []
    seen = {profile.name}
    # The path from ``profile`` to the profile being expanded, and where each is in its list.
    path = [profile.name]
    on_path = {profile.name}
    stack: list[Iterator[str]] = [iter(profile.fallback)]
    while stack:
        name = next(stack[-1], None)
        if name is None:
            stack.pop()
            on_path.discard(path.pop())
            continue
        if name in on_path:
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
        if len(found) >= MAX_CHAIN:
            raise ProfileLoadError(
                f"profile {profile.name!r}: its fallback chain holds more than {MAX_CHAIN} "
                f"profiles (the limit; {name!r} would be number {MAX_CHAIN + 1})",
                profile=profile.name,
                path=profile.source,
                reason="invalid",
            )
        found.append(_loaded(profile, name, load))
        path.append(name)
        on_path.add(name)
        stack.append(iter(found[-1].fallback))
    return tuple(found)


def _loaded(profile: Profile, name: str, load: Callable[[str], Profile]) -> Profile:
    try:
        return load(name)
    except ScriptoriumError as err:
        reason = err.reason if isinstance(err, ProfileLoadError) else None
        raise ProfileLoadError(
            f"profile {profile.name!r}: fallback {name!r} does not load ({err.message})",
            profile=profile.name,
            path=profile.source,
            reason=reason or "invalid",
        ) from err
