"""Moved to :mod:`scriptorium.llm.batches.calls` (shared by every provider's batch adapter); kept
as a re-export for one release."""

from scriptorium.llm.batches.calls import BatchCalls, SDKBatches, batch_priced, unfinished_error

__all__ = ["BatchCalls", "SDKBatches", "batch_priced", "unfinished_error"]
