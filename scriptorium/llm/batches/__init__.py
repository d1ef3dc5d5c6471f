"""Provider batch APIs: the port every provider's batch adapter implements (:mod:`.port`) and the
machinery they share (:mod:`.calls`). The adapters live in the provider packages.
"""

from __future__ import annotations

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

__all__ = [
    "BatchAPI",
    "BatchLimits",
    "BatchProvider",
    "BatchRows",
    "Entry",
    "RemoteBatch",
    "RowKind",
    "RowResult",
]
