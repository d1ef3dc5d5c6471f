"""Suggestions for mistyped names ("did you mean ..."): the one way a prompt, profile, artifact,
input or provider name that was not found gets one, so every message offers it alike."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["closest", "did_you_mean"]


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name most like ``name`` (difflib's ratio of at least 0.6), or None."""
    found = difflib.get_close_matches(name, [k for k in known if k != name], n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest known name, ``""`` when none is close: a suffix
    for a message that already says what was not found."""
    found = closest(name, known)
    return "" if found is None else f"; did you mean {found!r}?"
