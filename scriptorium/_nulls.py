"""JSON ``null`` for an optional request field means "not given": generated OpenAPI clients send
every optional field, as ``null`` when unset. The one rule, used by every request model (the
library's ``RunRequest``, the kernel's prompt-run payload), so they read such bodies alike."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["absent_when_null"]


def absent_when_null(data: Any, fields: Iterable[str]) -> Any:
    """``data`` without the ``fields`` whose value is ``None`` (anything but a dict as it is):
    for a ``mode="before"`` model validator, so the field's default applies."""
    if not isinstance(data, dict):
        return data
    names = tuple(fields)
    if not any(name in data and data[name] is None for name in names):
        return data
    return {k: v for k, v in data.items() if not (k in names and v is None)}
