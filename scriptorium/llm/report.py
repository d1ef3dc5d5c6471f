"""The LLM layer's port for telling whoever runs it what happens deep inside a call: the retry
loop and the client cache know nothing of runs or observers, yet their log records should carry
the run's identity and a transport retry should reach the observed generation.

Whoever runs a call (the use case, through ``observe.scope``) makes a :class:`CallReport`
current for the call's duration (one ``ContextVar`` set and reset: it follows the call into
``asyncio`` tasks and ``asyncio.to_thread``); the LLM layer reads it back through
:func:`log_extra` and :func:`notify_retry`. Nothing here imports an observer.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from scriptorium.llm.model import RetryInfo

__all__ = ["CallReport", "current", "log_extra", "notify_retry", "report_to", "stop_reporting"]

_log = logging.getLogger("scriptorium.llm")
_EMPTY: dict[str, str | None] = {"run_id": None, "prompt_id": None, "request_hash": None}


class CallReport(Protocol):
    """What a call in progress reports to: the ``extra`` of its log records, and its retries."""

    def extra(self) -> dict[str, str | None]:
        """The ``extra`` mapping of a log record made during the call."""
        ...

    def retried(self, info: RetryInfo) -> None:
        """A transport retry of the call (may raise: the LLM layer swallows it)."""
        ...


_CURRENT: ContextVar[CallReport | None] = ContextVar("scriptorium_call_report", default=None)


def report_to(report: CallReport) -> Token[CallReport | None]:
    """Make ``report`` the current call's; pass the token to :func:`stop_reporting`."""
    return _CURRENT.set(report)


def stop_reporting(token: Token[CallReport | None]) -> None:
    """Restore what was current before :func:`report_to`."""
    _CURRENT.reset(token)


def current() -> CallReport | None:
    """The current call's report, if any."""
    return _CURRENT.get()


def log_extra() -> dict[str, str | None]:
    """``extra`` for a log record made while a call is in progress (``None`` values outside one,
    so formatters that name the fields never fail)."""
    report = _CURRENT.get()
    return dict(_EMPTY) if report is None else report.extra()


def notify_retry(info: RetryInfo) -> None:
    """Tell the current call's report about a transport retry; a failing report never changes
    the call's outcome."""
    report = _CURRENT.get()
    if report is None:
        return
    try:
        report.retried(info)
    except Exception:
        _log.debug("the call's report failed on a retry", exc_info=True, extra=report.extra())
