"""Retrying calls to a provider, the same way for every adapter.

- :mod:`~scriptorium.llm.retry.policy`: how many attempts, within which budget, and the injectable
  hooks (clock, sleep, jitter, supervision, observers);
- :mod:`~scriptorium.llm.retry.http`: how a failure is classified (an HTTP error response by
  status, error codes, ``x-should-retry``, ``retry-after``; a connection broken mid-body);
- :mod:`~scriptorium.llm.retry.loop`: the loop itself, sync and async.

:class:`~scriptorium.llm.model.Failure` and :class:`~scriptorium.llm.model.RetryInfo` live with
the other boundary types in :mod:`scriptorium.llm.model` and are re-exported here.
"""

from scriptorium.llm.model import Failure, RetryInfo
from scriptorium.llm.retry.http import (
    Classify,
    as_failure,
    classify_http,
    parse_retry_after,
    transport_failure,
)
from scriptorium.llm.retry.loop import acall_with_retry, call_with_retry
from scriptorium.llm.retry.policy import SLEEP_SLICE_S, RetryHooks, RetryPolicy

__all__ = [
    "SLEEP_SLICE_S",
    "Classify",
    "Failure",
    "RetryHooks",
    "RetryInfo",
    "RetryPolicy",
    "acall_with_retry",
    "as_failure",
    "call_with_retry",
    "classify_http",
    "parse_retry_after",
    "transport_failure",
]
