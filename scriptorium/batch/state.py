"""The provider-batch state machine: what to do next, and what each outcome changes. No I/O.

A job is a list of rows (each a request and its ``custom_id``, the request hash's hex digits, or
None when the row could not be prepared) and a list of chunks. Each distinct ``custom_id`` is sent
once, in exactly one live chunk. A chunk moves

    submitting --(provider answered with an id)--> submitted --(provider says ended)--> ended

and is written to the state file *before* the create call (``submitting``) and again after it
(``submitted``). A chunk found ``submitting`` on start is the one in doubt: the create call may or
may not have reached the provider. It is looked up among the provider's recent batches (by our
tag where the provider keeps one, else by creation time and size, then by its custom ids), never
sent blind. An ended chunk records which of its rows expired or were canceled; those rows are
sent again, in a new chunk, when the job is resumed.

Drivers (:mod:`scriptorium.batch.job`) ask :func:`next_step`, do the one thing it names, report
the outcome through the transition functions, and save the state after every transition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from scriptorium.hashing import REQUEST_HASH_VERSION
from scriptorium.llm.batches import BatchLimits, Entry, RemoteBatch

__all__ = [
    "STATE_VERSION",
    "BatchState",
    "Chunk",
    "Done",
    "Lookup",
    "Poll",
    "Row",
    "Step",
    "Submit",
    "adopt",
    "begin_chunk",
    "chunk_for",
    "ended",
    "latest_chunks",
    "lost",
    "match_in_doubt",
    "next_step",
    "plan_chunk",
    "submitted",
    "unsent",
]

STATE_VERSION = 1

#: How far the provider's clock may run behind ours when matching an in-doubt chunk by time.
CLOCK_SKEW_S = 600.0

Phase = Literal["submitting", "submitted", "ended"]


@dataclass
class Row:
    """One input row: the request as given (JSON, never a key) and its custom id."""

    request: dict[str, Any]
    custom_id: str | None

    def to_json(self) -> dict[str, Any]:
        return {"request": self.request, "custom_id": self.custom_id}


@dataclass
class Chunk:
    """One provider batch of this job."""

    index: int
    custom_ids: list[str]
    phase: Phase
    #: Our name for the chunk, stored with the batch where the provider keeps metadata.
    tag: str
    #: When the create call was about to be made (epoch seconds), for the in-doubt lookup.
    started_at: float
    batch_id: str | None = None
    #: Rows of this chunk that expired or were canceled (known once it ended).
    unfinished: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "custom_ids": self.custom_ids,
            "phase": self.phase,
            "tag": self.tag,
            "started_at": self.started_at,
            "batch_id": self.batch_id,
            "unfinished": self.unfinished,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Chunk:
        phase = data["phase"]
        if phase not in ("submitting", "submitted", "ended"):
            raise ValueError(f"unknown chunk phase {phase!r}")
        return Chunk(
            index=int(data["index"]),
            custom_ids=[str(c) for c in data["custom_ids"]],
            phase=phase,
            tag=str(data["tag"]),
            started_at=float(data["started_at"]),
            batch_id=data.get("batch_id"),
            unfinished=[str(c) for c in data.get("unfinished", [])],
        )


@dataclass
class BatchState:
    """Everything a killed process needs to carry on: the rows, the chunks, the provider."""

    job_id: str
    provider: str
    rows: list[Row]
    chunks: list[Chunk] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The state file's content."""
        return {
            "version": STATE_VERSION,
            "hash_version": REQUEST_HASH_VERSION,
            "job_id": self.job_id,
            "provider": self.provider,
            "rows": [r.to_json() for r in self.rows],
            "chunks": [c.to_json() for c in self.chunks],
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> BatchState:
        """The state from a state file's content; ``ValueError``/``KeyError`` when it is not one."""
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"unsupported state version {data.get('version')!r}")
        if data.get("hash_version") != REQUEST_HASH_VERSION:
            # Custom ids are request hashes: ids of another hash form can never match again.
            raise ValueError(
                f"the state was saved under request hash form {data.get('hash_version')!r}, "
                f"this scriptorium uses form {REQUEST_HASH_VERSION}"
            )
        return BatchState(
            job_id=str(data["job_id"]),
            provider=str(data["provider"]),
            rows=[Row(dict(r["request"]), r.get("custom_id")) for r in data["rows"]],
            chunks=[Chunk.from_json(c) for c in data["chunks"]],
        )

    def distinct_ids(self) -> list[str]:
        """Every custom id once, in first-row order."""
        return list(dict.fromkeys(r.custom_id for r in self.rows if r.custom_id is not None))


# --- what to do next -------------------------------------------------------------------------


@dataclass(frozen=True)
class Lookup:
    """Find out whether the in-doubt chunk reached the provider."""

    chunk: Chunk


@dataclass(frozen=True)
class Submit:
    """Send these rows (first chunk of what is unsent) as a new batch."""

    custom_ids: tuple[str, ...]


@dataclass(frozen=True)
class Poll:
    """Ask the provider about these submitted chunks."""

    chunks: tuple[Chunk, ...]


@dataclass(frozen=True)
class Done:
    """Every chunk has ended; results can be read."""


Step = Lookup | Submit | Poll | Done


def chunk_for(state: BatchState, custom_id: str) -> Chunk | None:
    """The chunk holding the latest submission of ``custom_id``."""
    for chunk in reversed(state.chunks):
        if custom_id in chunk.custom_ids:
            return chunk
    return None


def latest_chunks(state: BatchState) -> dict[str, Chunk]:
    """Each sent custom id's latest chunk (what :func:`chunk_for` answers, for every id at once)."""
    latest: dict[str, Chunk] = {}
    for chunk in state.chunks:
        for custom_id in chunk.custom_ids:
            latest[custom_id] = chunk
    return latest


def unsent(state: BatchState, *, resend_unfinished: bool) -> list[str]:
    """Custom ids with no live submission: never sent, or (when ``resend_unfinished``) last sent
    in a chunk where they expired or were canceled."""
    latest = latest_chunks(state)
    unfinished = {c for chunk in state.chunks for c in chunk.unfinished}
    out = []
    for custom_id in state.distinct_ids():
        last = latest.get(custom_id)
        if last is None or (
            resend_unfinished and custom_id in unfinished and custom_id in last.unfinished
        ):
            out.append(custom_id)
    return out


def next_step(
    state: BatchState,
    entries: Mapping[str, Entry],
    limits: BatchLimits,
    *,
    resend_unfinished: bool = False,
) -> Step:
    """The one thing to do next. An in-doubt chunk comes first (nothing new is sent while one
    is in doubt, so there is never more than one), then unsent rows, then polling."""
    for chunk in state.chunks:
        if chunk.phase == "submitting":
            return Lookup(chunk)
    pending = unsent(state, resend_unfinished=resend_unfinished)
    if pending:
        return Submit(tuple(plan_chunk([entries[c] for c in pending], limits)))
    running = tuple(c for c in state.chunks if c.phase == "submitted")
    if running:
        return Poll(running)
    return Done()


def plan_chunk(entries: Sequence[Entry], limits: BatchLimits) -> list[str]:
    """The custom ids of the next chunk: the longest prefix of ``entries`` of the first entry's
    group within the limits (at least one row, so an oversize row is still tried alone and
    refused by the provider as that row's error)."""
    if not entries:
        return []
    group = entries[0].group
    chosen: list[str] = []
    size = 0
    for entry in entries:
        if entry.group != group:
            continue
        if chosen and (len(chosen) >= limits.max_requests or size + entry.size > limits.max_bytes):
            break
        chosen.append(entry.custom_id)
        size += entry.size
    return chosen


# --- transitions -----------------------------------------------------------------------------


def begin_chunk(state: BatchState, custom_ids: Iterable[str], now: float) -> Chunk:
    """Record a chunk about to be sent (saved before the create call)."""
    index = len(state.chunks)
    chunk = Chunk(
        index=index,
        custom_ids=list(custom_ids),
        phase="submitting",
        tag=f"{state.job_id}-{index}",
        started_at=now,
    )
    state.chunks.append(chunk)
    return chunk


def submitted(chunk: Chunk, batch_id: str) -> None:
    """The provider accepted the chunk as ``batch_id`` (saved right after the create call)."""
    chunk.batch_id = batch_id
    chunk.phase = "submitted"


def adopt(chunk: Chunk, batch: RemoteBatch) -> None:
    """The in-doubt chunk was found at the provider: it is that batch, and is not sent again."""
    # Submitted, even if it has already ended: the next poll reads its results like any other.
    submitted(chunk, batch.id)


def lost(chunk: Chunk, now: float) -> None:
    """The in-doubt chunk never reached the provider: it is sent again as it is."""
    chunk.started_at = now


def ended(chunk: Chunk, unfinished: Iterable[str]) -> None:
    """The chunk's batch ended; ``unfinished`` rows expired or were canceled."""
    chunk.phase = "ended"
    chunk.unfinished = sorted(set(unfinished))


def match_in_doubt(
    state: BatchState,
    chunk: Chunk,
    candidates: Sequence[RemoteBatch],
    *,
    tagged: bool,
    ids_of: Mapping[str, frozenset[str]] | None = None,
) -> RemoteBatch | Literal["undecided"] | None:
    """Which of the provider's recent batches is the in-doubt ``chunk``: that batch, None when
    none can be (it never arrived: send it), or ``"undecided"`` while several could be and their
    custom ids are not known yet (ask again once they have ended)."""
    if tagged:
        return next((b for b in candidates if b.tag == chunk.tag), None)
    claimed = {c.batch_id for c in state.chunks if c.batch_id is not None}
    possible = [
        b
        for b in candidates
        if b.id not in claimed
        and b.size == len(chunk.custom_ids)
        and b.created_at >= chunk.started_at - CLOCK_SKEW_S
    ]
    if len(possible) <= 1:
        return possible[0] if possible else None
    wanted = frozenset(chunk.custom_ids)
    known = ids_of or {}
    for batch in possible:
        if known.get(batch.id) == wanted:
            return batch
    if all(b.id in known for b in possible):
        return None
    return "undecided"
