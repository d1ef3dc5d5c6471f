"""Batch execution: provider batch jobs (half-price Message Batches and Batch API), their state
machine and state file; the executor seam (:mod:`scriptorium.batch.work`: executors run rows
through a narrow row-work port, never the Engine) with the local thread-pool executor and the Ray
executor (extra ``ray``), which share the rate budgets of :mod:`scriptorium.limits`. Nothing here
imports Ray until the Ray executor runs.

``Engine.submit_batch`` and ``Engine.resume_batch`` are the entry points; :class:`BatchJob` is what
they return. Nothing here imports an SDK until a job talks to a provider, and importing a submodule
loads none of the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr

if TYPE_CHECKING:
    from scriptorium.batch.job import BatchJob, BatchStatus
    from scriptorium.llm.batches import BatchLimits

__all__ = ["BatchJob", "BatchLimits", "BatchStatus"]

# Loaded on first use: a local batch (``scriptorium.batch.pipeline``, ``.local``) never needs the
# provider-batch job or the batch APIs' port.
__getattr__ = lazy_getattr(
    "scriptorium",
    {
        "BatchJob": "batch.job",
        "BatchStatus": "batch.job",
        "BatchLimits": "llm.batches",
    },
)
