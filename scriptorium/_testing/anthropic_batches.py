"""The Message Batches endpoints of ``FakeAnthropicServer``, in the shapes the ``anthropic`` SDK
reads: create, retrieve, list (newest first, ``after_id`` paging), results (JSONL) and cancel.
The batches themselves and their script live in :mod:`scriptorium._testing.batches`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

from scriptorium._testing.batches import FakeBatch, FakeBatches, RowOutcome
from scriptorium._testing.http import Answer, RecordedRequest

__all__ = ["AnthropicBatchRoutes"]

_BATCH = re.compile(r"^/v1/messages/batches/([A-Za-z0-9_]+)(/results|/cancel)?$")
_CUSTOM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_DAY_S = 24 * 3600


def _time(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


def _error(status: int, kind: str, message: str) -> Answer:
    return Answer.json({"type": "error", "error": {"type": kind, "message": message}}, status)


class AnthropicBatchRoutes:
    """Answers ``/v1/messages/batches*`` for one server; ``base_url`` gives ``results_url``."""

    def __init__(self, batches: FakeBatches, base_url: Callable[[], str]) -> None:
        self.batches = batches
        self._base_url = base_url

    def answer(self, request: RecordedRequest) -> Answer | None:
        path = urlsplit(request.path).path.rstrip("/")
        if path == "/v1/messages/batches":
            self.batches.wait()
            if request.method == "POST":
                return self._create(request)
            if request.method == "GET":
                return self._list(request)
            return None
        found = _BATCH.match(path)
        if found is None:
            return None
        self.batches.wait()
        batch = self.batches.get(found.group(1))
        if batch is None:
            return _error(404, "not_found_error", f"no batch {found.group(1)}")
        action = found.group(2)
        if action is None and request.method == "GET":
            return Answer.json(self.view(self.batches.poll(batch)))
        if action == "/cancel" and request.method == "POST":
            return Answer.json(self.view(self.batches.cancel(batch)))
        if action == "/results" and request.method == "GET":
            return self._results(batch)
        return None

    def _create(self, request: RecordedRequest) -> Answer:
        body = request.body
        entries = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(entries, list) or not entries:
            return _error(400, "invalid_request_error", "requests: a non-empty list is required")
        rows: list[tuple[str, Any]] = []
        seen: set[str] = set()
        for entry in entries:
            custom_id = entry.get("custom_id") if isinstance(entry, dict) else None
            params = entry.get("params") if isinstance(entry, dict) else None
            if not isinstance(custom_id, str) or not _CUSTOM_ID.match(custom_id):
                return _error(400, "invalid_request_error", f"bad custom_id {custom_id!r}")
            if custom_id in seen:
                return _error(400, "invalid_request_error", f"duplicate custom_id {custom_id}")
            if not isinstance(params, dict) or "model" not in params:
                return _error(400, "invalid_request_error", "params: an object with model")
            seen.add(custom_id)
            rows.append((custom_id, params))
        return Answer.json(self.view(self.batches.create(rows)))

    def _list(self, request: RecordedRequest) -> Answer:
        query = parse_qs(urlsplit(request.path).query)
        limit = int(query.get("limit", ["20"])[0])
        after = query.get("after_id", [None])[0]
        batches = self.batches.newest_first()
        if after is not None:
            ids = [b.id for b in batches]
            batches = batches[ids.index(after) + 1 :] if after in ids else []
        page = batches[:limit]
        return Answer.json(
            {
                "data": [self.view(b) for b in page],
                "has_more": len(batches) > limit,
                "first_id": page[0].id if page else None,
                "last_id": page[-1].id if page else None,
            }
        )

    def _results(self, batch: FakeBatch) -> Answer:
        if not batch.ended:
            return _error(404, "not_found_error", f"batch {batch.id} has no results yet")
        # UTF-8 as the API writes it: non-ASCII (U+2028 too) raw in the lines.
        lines = [
            json.dumps(_result_line(r), ensure_ascii=False) for r in self.batches.ordered(batch)
        ]
        body = ("\n".join(lines) + "\n").encode("utf-8")
        return Answer(200, body, content_type="application/binary")

    def view(self, batch: FakeBatch) -> dict[str, Any]:
        """The ``message_batch`` object for ``batch``."""
        counts = batch.counts()
        if batch.ended:
            status = "ended"
        elif batch.cancel_requested:
            status = "canceling"
        else:
            status = "in_progress"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": {
                k: counts.get(k, 0)
                for k in ("processing", "succeeded", "errored", "canceled", "expired")
            },
            "created_at": _time(batch.created_at),
            "expires_at": _time(batch.created_at + _DAY_S),
            "ended_at": _time(batch.ended_at),
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": (
                f"{self._base_url()}/v1/messages/batches/{batch.id}/results"
                if batch.ended
                else None
            ),
        }


def _result_line(row: RowOutcome) -> dict[str, Any]:
    result: dict[str, Any]
    if row.outcome == "succeeded":
        result = {"type": "succeeded", "message": row.body}
    elif row.outcome == "errored":
        body = row.body
        if not isinstance(body, dict) or "error" not in body:
            body = {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "scripted row failure"},
            }
        result = {"type": "errored", "error": body}
    else:
        result = {"type": row.outcome}
    return {"custom_id": row.custom_id, "result": result}
