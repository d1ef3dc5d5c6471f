"""Batch execution: the executor seam (:mod:`scriptorium.batch.executor`), the local thread-pool
executor, the Ray executor (extra ``ray``) and the rate budgets they share
(:mod:`scriptorium.batch.limits`). Nothing here imports Ray until the Ray executor runs."""
