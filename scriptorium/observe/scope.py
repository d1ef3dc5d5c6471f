"""The scope of the run in progress, for log records and retry events deep in the LLM layer.

The retry loop lives inside the provider adapters, which know nothing of runs. The runner sets a
context variable for the duration of a run (one ``ContextVar.set`` and ``reset``: it follows the
run into ``asyncio`` tasks and into ``asyncio.to_thread``), and the adapters read it back through
:func:`log_extra` and :func:`notify_retry`.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scriptorium.llm.model import RetryInfo
    from scriptorium.observe.observer import GenerationObservation

__all__ = [
    "RunScope",
    "current_scope",
    "enter",
    "enter_for_logs",
    "leave",
    "log_extra",
    "notify_retry",
]

_log = logging.getLogger("scriptorium.observe")
# The records made during a run outside the runner come from the retry loop, at INFO and below:
# when its logger would drop INFO, no record can need the scope.
_RETRY_LOG = logging.getLogger("scriptorium.llm.retry")


@dataclass(slots=True)
class RunScope:
    """What identifies the run in progress; ``generation`` is the call being observed, if any."""

    run_id: str
    prompt_id: str
    request_hash: str | None = None
    generation: GenerationObservation | None = None

    def extra(self) -> dict[str, str | None]:
        """The ``extra`` mapping for a log record: becomes attributes of the record."""
        return {
            "run_id": self.run_id,
            "prompt_id": self.prompt_id,
            "request_hash": self.request_hash,
        }


_SCOPE: ContextVar[RunScope | None] = ContextVar("scriptorium_run_scope", default=None)
_EMPTY: dict[str, str | None] = {"run_id": None, "prompt_id": None, "request_hash": None}


def enter(scope: RunScope) -> Token[RunScope | None]:
    """Make ``scope`` the current run's; pass the token to :func:`leave`."""
    return _SCOPE.set(scope)


def enter_for_logs(run_id: str, prompt_id: str, request_hash: str) -> Token[RunScope | None] | None:
    """Enter a scope only when a record could carry it (the retry loop's logger is enabled for
    INFO): a run without an observer and without logging pays one cached level check."""
    if not _RETRY_LOG.isEnabledFor(logging.INFO):
        return None
    return _SCOPE.set(RunScope(run_id, prompt_id, request_hash))


def leave(token: Token[RunScope | None]) -> None:
    _SCOPE.reset(token)


def current_scope() -> RunScope | None:
    return _SCOPE.get()


def log_extra() -> dict[str, str | None]:
    """``extra`` for a log record made while a run is in progress (``None`` values outside one,
    so formatters that name the fields never fail)."""
    scope = _SCOPE.get()
    return dict(_EMPTY) if scope is None else scope.extra()


def notify_retry(info: RetryInfo) -> None:
    """Tell the observed generation in progress, if any, about a transport retry."""
    scope = _SCOPE.get()
    if scope is None or scope.generation is None:
        return
    try:
        scope.generation.retry(info)
    except Exception:  # observers watch; they never change the outcome
        _log.debug("observer failed on a retry", exc_info=True, extra=scope.extra())
