"""Observing runs: the :class:`Observer` port (no-op unless one is given) and, in the ``otel``
extra, :class:`OTelObserver`, which emits OpenTelemetry GenAI spans and metrics.

``OTelObserver`` is imported on first access, so importing this package (or ``scriptorium``)
never imports ``opentelemetry``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scriptorium.observe.observer import (
    GenerationKind,
    GenerationObservation,
    Observer,
    RunObservation,
)

if TYPE_CHECKING:
    from scriptorium.observe.otel import OTelObserver

__all__ = [
    "GenerationKind",
    "GenerationObservation",
    "OTelObserver",
    "Observer",
    "RunObservation",
    "observer_from_env",
]


def observer_from_env(env: Any = None) -> Observer | None:
    """``OTelObserver()`` when ``SCRIPTORIUM_OTEL`` is ``1`` (or ``true``) in ``env`` (default
    ``os.environ``), else ``None``: how the CLI, the kernel and the HTTP server turn tracing on.
    Raises ``InvalidRequestError`` when it is asked for and ``opentelemetry-api`` is missing."""
    import os

    values = os.environ if env is None else env
    flag = str(values.get("SCRIPTORIUM_OTEL", "")).strip().lower()
    if flag not in ("1", "true", "yes", "on"):
        return None
    from scriptorium.observe.otel import OTelObserver

    return OTelObserver()


def __getattr__(name: str) -> Any:
    if name == "OTelObserver":
        from scriptorium.observe.otel import OTelObserver

        return OTelObserver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
