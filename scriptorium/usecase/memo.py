"""Per-runner memory of values derived from immutable objects.

Repositories hand out the same frozen definition and profile objects while their files are
unchanged, and the validator the same ``LoadedSchema``; values computed from them alone (hashes,
merged settings, contracts) can be remembered by the *identity* of those objects. An entry keeps
its objects alive and is used only while each is the very object it was made from, so a recycled
``id()`` can never serve a stale value. Bounded; safe to share between threads. This runs several
times per run, so it is written for speed: no closures, no generators.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

__all__ = ["IdentityMemo"]

V = TypeVar("V")

_LIMIT = 512


def _is(a: object, b: object) -> bool:
    return a is b


class IdentityMemo(Generic[V]):
    """``get(objects, extra, compute, *args)`` returns ``compute(*args)``, computed once per
    identity of ``objects`` and equal ``extra``, a hashable detail such as an
    override; a value for an unhashable ``extra`` is computed and not kept."""

    def __init__(self, limit: int = _LIMIT) -> None:
        self._entries: dict[Hashable, tuple[tuple[object, ...], V]] = {}
        self._lock = threading.Lock()
        self._limit = limit

    def get(
        self,
        objects: tuple[object, ...],
        extra: object,
        compute: Callable[..., V],
        *args: Any,
    ) -> V:
        first = objects[0]
        single = len(objects) == 1
        key = (id(first), extra) if single else (*map(id, objects), extra)
        try:
            hit = self._entries.get(key)
        except TypeError:  # an unhashable detail: compute, do not remember
            return compute(*args)
        if hit is not None:
            kept = hit[0]
            if kept[0] is first and (single or all(map(_is, kept, objects))):
                return hit[1]
        value = compute(*args)
        with self._lock:
            if len(self._entries) >= self._limit:
                self._entries.clear()
            self._entries[key] = (objects, value)
        return value
