"""Provider batch APIs: the port every provider's batch adapter implements (:mod:`.port`) and the
machinery they share (:mod:`.calls`). The adapters live in the provider packages.

``ANTHROPIC_LIMITS`` and ``OPENAI_LIMITS`` (the most one batch may hold) are still importable from
here for one release; they now live in their providers' packages and are loaded on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scriptorium.llm.batches.port import (
    BatchAPI,
    BatchLimits,
    BatchProvider,
    BatchRows,
    Entry,
    RemoteBatch,
    RowKind,
    RowResult,
)

if TYPE_CHECKING:
    from scriptorium.llm.anthropic.api import BATCH_LIMITS as ANTHROPIC_LIMITS
    from scriptorium.llm.openai.api import BATCH_LIMITS as OPENAI_LIMITS

__all__ = [
    "ANTHROPIC_LIMITS",
    "OPENAI_LIMITS",
    "BatchAPI",
    "BatchLimits",
    "BatchProvider",
    "BatchRows",
    "Entry",
    "RemoteBatch",
    "RowKind",
    "RowResult",
]


def __getattr__(name: str) -> Any:
    # Kept for one release: each provider's batch limits now live in its package.
    if name == "ANTHROPIC_LIMITS":
        from scriptorium.llm.anthropic.api import BATCH_LIMITS

        return BATCH_LIMITS
    if name == "OPENAI_LIMITS":
        from scriptorium.llm.openai.api import BATCH_LIMITS as OPENAI

        return OPENAI
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
