"""Module-level lazy attributes, so package ``__init__`` files can name adapters without importing
their heavy dependencies (jinja2, jsonschema, provider SDKs) at import time."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving ``names`` (attribute -> submodule) on first access."""

    def __getattr__(name: str) -> Any:
        sub = names.get(name)
        if sub is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{sub}"), name)

    return __getattr__
