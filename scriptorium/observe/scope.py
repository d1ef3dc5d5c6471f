"""The scope of the run in progress, for log records and retry events deep in the LLM layer.

The retry loop lives inside the provider adapters, which know nothing of runs. The runner makes a
:class:`RunScope` the current call report of :mod:`scriptorium.llm.report` (the LLM layer's port)
for the duration of a run; the adapters read it back through that port's ``log_extra`` and
``notify_retry``, never importing this module.
"""

from __future__ import annotations

import logging
from contextvars import Token
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scriptorium.llm.report import CallReport, current, report_to, stop_reporting

if TYPE_CHECKING:
    from scriptorium.llm.model import RetryInfo
    from scriptorium.observe.observer import GenerationObservation

__all__ = [
    "RunScope",
    "current_scope",
    "enter",
    "enter_for_logs",
    "leave",
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

    def retried(self, info: RetryInfo) -> None:
        """Tell the observed generation in progress, if any, about a transport retry."""
        if self.generation is None:
            return
        try:
            self.generation.retry(info)
        except Exception:  # observers watch; they never change the outcome
            _log.debug("observer failed on a retry", exc_info=True, extra=self.extra())


def enter(scope: RunScope) -> Token[CallReport | None]:
    """Make ``scope`` the current run's; pass the token to :func:`leave`."""
    return report_to(scope)


def enter_for_logs(
    run_id: str, prompt_id: str, request_hash: str
) -> Token[CallReport | None] | None:
    """Enter a scope only when a record could carry it (the retry loop's logger is enabled for
    INFO): a run without an observer and without logging pays one cached level check."""
    if not _RETRY_LOG.isEnabledFor(logging.INFO):
        return None
    return report_to(RunScope(run_id, prompt_id, request_hash))


def leave(token: Token[CallReport | None]) -> None:
    """Restore the scope before :func:`enter`."""
    stop_reporting(token)


def current_scope() -> RunScope | None:
    """The run scope in progress, if any."""
    found = current()
    return found if isinstance(found, RunScope) else None
