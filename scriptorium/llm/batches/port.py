"""The port a provider batch API is driven through, and what crosses it.

A :class:`BatchProvider` has two halves. :class:`BatchRows` (pure) turns a run's
:class:`~scriptorium.llm.model.LLMRequest` into one batch row (``entry``) and a succeeded row back
into the :class:`~scriptorium.llm.model.LLMResponse` a run would have got, priced at the batch
rate. :class:`BatchAPI` does the I/O: it submits a chunk of rows as one provider batch, reports on
batches (by id, or the recent ones, for the in-doubt lookup) and reads an ended batch's rows. The
adapters live in each provider's package (the spec's ``batches``), such as
:mod:`scriptorium.llm.openai.batches`; what they share is in :mod:`scriptorium.llm.batches.calls`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from scriptorium.llm.model import LLMRequest, LLMResponse

__all__ = [
    "BatchAPI",
    "BatchLimits",
    "BatchProvider",
    "BatchRows",
    "Entry",
    "RemoteBatch",
    "RowResult",
]


@dataclass(frozen=True)
class BatchLimits:
    """The most requests and bytes one provider batch may hold."""

    max_requests: int
    max_bytes: int


@dataclass(frozen=True)
class Entry:
    """One row as the provider takes it: ``data`` is the row's JSON-ready form, ``size`` its
    encoded size (what counts against the byte limit), ``group`` what rows sharing a batch must
    share (OpenAI: the model; Anthropic: nothing)."""

    custom_id: str
    data: dict[str, Any]
    size: int
    group: str = ""


@dataclass(frozen=True)
class RemoteBatch:
    """What the provider says about one of its batches."""

    id: str
    ended: bool
    #: Seconds since the epoch, by the provider's clock.
    created_at: float
    #: Requests in the batch.
    size: int
    #: Our tag, where the provider keeps one (OpenAI's ``metadata``); None where it cannot.
    tag: str | None = None
    #: The provider's own status word, for messages.
    status: str = ""


RowKind = Literal["succeeded", "errored", "expired", "canceled"]


@dataclass(frozen=True)
class RowResult:
    """One row of an ended batch: how it ended and the provider's body for it (the message or
    completion when it succeeded, the error when it did not)."""

    custom_id: str
    kind: RowKind
    body: Any = None
    #: The HTTP status a plain request would have had (errored rows).
    status: int = 200


class BatchRows(Protocol):
    """How a run's request becomes a batch row, and a row's result the run's response. No I/O."""

    def entry(self, custom_id: str, request: LLMRequest) -> Entry:
        """The batch row for ``request``: exactly the body a run would send."""
        ...

    def response(self, request: LLMRequest, row: RowResult) -> LLMResponse:
        """A succeeded row as the response a run of ``request`` would have got, at the batch
        price, with ``metadata["service_tier"] == "batch"``; ``LLMGenerateError`` for any other
        row, with the reason a run would have had."""
        ...


class BatchAPI(Protocol):
    """A provider's batch endpoints, bound to one endpoint and key."""

    #: The provider's name.
    name: str
    limits: BatchLimits
    #: Whether :meth:`create` stores ``tag`` where :meth:`recent` can read it back.
    tagged: bool

    def create(self, entries: list[Entry], tag: str) -> RemoteBatch:
        """Submit ``entries`` as one batch (sent once, never retried)."""
        ...

    def retrieve(self, batch_id: str) -> RemoteBatch:
        """The batch's current state."""
        ...

    def recent(self, since: float) -> list[RemoteBatch]:
        """Batches created at or after ``since`` (epoch seconds), newest first."""
        ...

    def results(self, batch_id: str) -> list[RowResult]:
        """Every row of an ended batch, in whatever order the provider lists them."""
        ...

    def cancel(self, batch_id: str) -> None:
        """Ask the provider to stop the batch; rows not yet run end ``canceled``."""
        ...

    def close(self) -> None:
        """Close open connections; the next call opens new ones."""
        ...


class BatchProvider(BatchRows, BatchAPI, Protocol):
    """Both halves, as each provider's adapter module implements them."""
