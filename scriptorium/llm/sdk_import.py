"""A provider's SDK, imported once on first use: what every provider package's ``sdk`` module
shares. ``import scriptorium`` loads no SDK; a run on a provider whose SDK is not installed fails
with ``LLMGenerateError(reason="provider_unavailable")`` naming the package and the install line.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from scriptorium._version import install_hint
from scriptorium.errors import LLMGenerateError

__all__ = ["LazySDK", "sdk_unavailable"]


def sdk_unavailable(provider: str, package: str, extra: str) -> LLMGenerateError:
    """The error of a run on ``provider`` whose SDK ``package`` is not installed (or does not
    import): ``provider_unavailable``, with the install line of the ``extra`` that brings it."""
    return LLMGenerateError(
        f"the {provider} provider needs the {package!r} package: " + install_hint(extra),
        reason="provider_unavailable",
        provider=provider,
    )


class LazySDK:
    """Calling it gives the module ``module`` (imported on the first call, thread-safe), or
    raises ``provider_unavailable`` for ``provider`` naming ``package`` and the ``extra`` that
    brings it."""

    def __init__(self, module: str, *, provider: str, package: str, extra: str) -> None:
        self.module = module
        self.provider = provider
        self.package = package
        self.extra = extra
        self._loaded: Any = None
        self._lock = threading.Lock()

    def __call__(self) -> Any:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                try:
                    self._loaded = importlib.import_module(self.module)
                except ImportError as err:
                    raise sdk_unavailable(self.provider, self.package, self.extra) from err
            return self._loaded
