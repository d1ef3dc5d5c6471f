"""Moved to :mod:`scriptorium.llm.batches` (the port a provider's batch API implements); kept as
a re-export for one release."""

from scriptorium.llm.batches import (
    ANTHROPIC_LIMITS,
    OPENAI_LIMITS,
    BatchAPI,
    BatchLimits,
    BatchProvider,
    BatchRows,
    Entry,
    RemoteBatch,
    RowResult,
)

__all__ = [
    "ANTHROPIC_LIMITS",
    "OPENAI_LIMITS",
    "BatchAPI",
    "BatchLimits",
    "BatchProvider",
    "BatchRows",
    "Entry",
    "RemoteBatch",
    "RowResult",
]
