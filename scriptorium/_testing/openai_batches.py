"""The Files and Batch endpoints of ``FakeOpenAIServer``, in the shapes the ``openai`` SDK reads:
``POST /v1/files`` (multipart upload), ``GET /v1/files/{id}/content``, and batches create,
retrieve, list (newest first, ``after`` paging) and cancel. A batch ends ``completed`` with an
output file (every answered row, errors included as non-200 responses) and an error file (rows
never answered), ``expired`` or ``cancelled`` when scripted rows expired or it was canceled."""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any
from urllib.parse import parse_qs, urlsplit

from scriptorium._journal import jsonl_lines, load_json
from scriptorium._testing.batches import FakeBatch, FakeBatches, RowOutcome
from scriptorium._testing.http import Answer, RecordedRequest

__all__ = ["OpenAIBatchRoutes", "StoredFile"]

_DAY_S = 24 * 3600


def _error(status: int, message: str, code: str | None = None) -> Answer:
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None}}
    body["error"]["code"] = code
    return Answer.json(body, status)


class StoredFile:
    """A file on the fake provider."""

    def __init__(self, ident: str, name: str, purpose: str, content: bytes) -> None:
        self.id = ident
        self.name = name
        self.purpose = purpose
        self.content = content
        self.created_at = int(time.time())

    def view(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.content),
            "created_at": self.created_at,
            "filename": self.name,
            "purpose": self.purpose,
            "status": "processed",
        }


def _multipart(request: RecordedRequest) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a ``multipart/form-data`` body: name -> (filename, bytes)."""
    content_type = request.headers.get("content-type", "")
    head = f"Content-Type: {content_type}\r\n\r\n".encode("latin-1")
    message = BytesParser(policy=HTTP).parsebytes(head + request.raw)
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            fields[name] = (part.get_filename(), payload)
    return fields


class OpenAIBatchRoutes:
    """Answers ``/v1/files*`` and ``/v1/batches*`` for one server (under ``prefix``: Azure's are
    under ``/openai``, for batches of ``endpoint`` or one of ``also``, which its rows' ``url``
    must name too)."""

    def __init__(
        self,
        batches: FakeBatches,
        *,
        prefix: str = "/v1",
        endpoint: str = "/v1/chat/completions",
        also: tuple[str, ...] = ("/v1/responses",),
    ) -> None:
        self.prefix = prefix
        self.endpoint = endpoint
        #: Every endpoint a batch may be for (Chat Completions' and the Responses API's).
        self.endpoints = (endpoint, *also)
        self._batch = re.compile(rf"^{re.escape(prefix)}/batches/([A-Za-z0-9_]+)(/cancel)?$")
        self._file = re.compile(rf"^{re.escape(prefix)}/files/([A-Za-z0-9_-]+)(/content)?$")
        self.batches = batches
        self.files: dict[str, StoredFile] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self.files.clear()

    def _store(self, name: str, purpose: str, content: bytes) -> StoredFile:
        with self._lock:
            stored = StoredFile(f"file-fake{next(self._ids):04d}", name, purpose, content)
            self.files[stored.id] = stored
            return stored

    def answer(self, request: RecordedRequest) -> Answer | None:
        path = urlsplit(request.path).path.rstrip("/")
        if path == f"{self.prefix}/files" and request.method == "POST":
            self.batches.wait()
            return self._upload(request)
        found = self._file.match(path)
        if found is not None and request.method == "GET":
            self.batches.wait()
            stored = self.files.get(found.group(1))
            if stored is None:
                return _error(404, f"no file {found.group(1)}")
            if found.group(2):
                return Answer(200, stored.content, content_type="application/octet-stream")
            return Answer.json(stored.view())
        if path == f"{self.prefix}/batches":
            self.batches.wait()
            if request.method == "POST":
                return self._create(request)
            if request.method == "GET":
                return self._list(request)
            return None
        found = self._batch.match(path)
        if found is None:
            return None
        self.batches.wait()
        batch = self.batches.get(found.group(1))
        if batch is None:
            return _error(404, f"no batch {found.group(1)}")
        if found.group(2) and request.method == "POST":
            return Answer.json(self.view(self.batches.cancel(batch)))
        if not found.group(2) and request.method == "GET":
            return Answer.json(self.view(self.batches.poll(batch)))
        return None

    def _upload(self, request: RecordedRequest) -> Answer:
        try:
            fields = _multipart(request)
        except (ValueError, TypeError) as err:
            return _error(400, f"not a multipart upload: {err}")
        purpose = fields.get("purpose", (None, b""))[1].decode("utf-8")
        if "file" not in fields:
            return _error(400, "file: required")
        name, content = fields["file"]
        return Answer.json(self._store(name or "upload.jsonl", purpose, content).view())

    def _create(self, request: RecordedRequest) -> Answer:
        body = request.body if isinstance(request.body, dict) else {}
        stored = self.files.get(str(body.get("input_file_id")))
        if stored is None:
            return _error(404, f"no file {body.get('input_file_id')}")
        endpoint = body.get("endpoint")
        if body.get("completion_window") != "24h" or endpoint not in self.endpoints:
            named = " or ".join(self.endpoints)
            return _error(400, f"completion_window must be 24h and endpoint {named}")
        rows: list[tuple[str, Any]] = []
        models: set[Any] = set()
        for number, line in jsonl_lines(stored.content.decode("utf-8")):
            if not line.strip():
                continue
            try:
                entry = load_json(line)
            except ValueError:
                return _error(400, f"line {number} of the input file is not JSON")
            custom_id = entry.get("custom_id")
            if entry.get("url") != endpoint or entry.get("method") != "POST":
                return _error(400, f"line {number}: url and method must match the batch")
            if not isinstance(custom_id, str) or custom_id in {r[0] for r in rows}:
                return _error(400, f"line {number}: custom_id missing or repeated")
            params = entry.get("body")
            models.add(params.get("model") if isinstance(params, dict) else None)
            rows.append((custom_id, params))
        if not rows or len(models) != 1:
            return _error(400, "a batch file holds one or more requests for one model")
        metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        extra = {"input_file_id": stored.id, "endpoint": endpoint}
        return Answer.json(self.view(self.batches.create(rows, metadata=metadata, extra=extra)))

    def _list(self, request: RecordedRequest) -> Answer:
        query = parse_qs(urlsplit(request.path).query)
        limit = int(query.get("limit", ["20"])[0])
        after = query.get("after", [None])[0]
        batches = self.batches.newest_first()
        if after is not None:
            ids = [b.id for b in batches]
            batches = batches[ids.index(after) + 1 :] if after in ids else []
        page = batches[:limit]
        return Answer.json(
            {
                "object": "list",
                "data": [self.view(b) for b in page],
                "first_id": page[0].id if page else None,
                "last_id": page[-1].id if page else None,
                "has_more": len(batches) > limit,
            }
        )

    def view(self, batch: FakeBatch) -> dict[str, Any]:
        """The ``batch`` object; on its end, the output and error files are written once."""
        if batch.ended and "status" not in batch.extra:
            self._finish(batch)
        created = int(batch.created_at)
        status = batch.extra.get("status")
        if status is None:
            status = "cancelling" if batch.cancel_requested else "in_progress"
        counts = batch.counts()
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.extra["endpoint"],
            "errors": None,
            "input_file_id": batch.extra["input_file_id"],
            "completion_window": "24h",
            "status": status,
            "output_file_id": batch.extra.get("output_file_id"),
            "error_file_id": batch.extra.get("error_file_id"),
            "created_at": created,
            "in_progress_at": created,
            "expires_at": created + _DAY_S,
            "completed_at": int(batch.ended_at)
            if status == "completed" and batch.ended_at
            else None,
            "request_counts": {
                "total": len(batch.rows),
                "completed": counts.get("succeeded", 0),
                "failed": len(batch.rows) - counts.get("succeeded", 0) if batch.ended else 0,
            },
            "metadata": batch.metadata or None,
            "usage": None,
        }

    def _finish(self, batch: FakeBatch) -> None:
        ordered = self.batches.ordered(batch)
        answered = [r for r in ordered if r.outcome in ("succeeded", "errored")]
        unanswered = [r for r in ordered if r.outcome not in ("succeeded", "errored")]
        kinds = {r.outcome for r in unanswered}
        status = "cancelled" if "canceled" in kinds else "expired" if kinds else "completed"
        batch.extra["status"] = status
        if answered:
            lines = [json.dumps(_output_line(batch, r), ensure_ascii=False) for r in answered]
            name = f"batch_{batch.id}_output.jsonl"
            stored = self._store(name, "batch_output", ("\n".join(lines) + "\n").encode())
            batch.extra["output_file_id"] = stored.id
        if unanswered:
            lines = [json.dumps(_error_line(r), ensure_ascii=False) for r in unanswered]
            name = f"batch_{batch.id}_error.jsonl"
            stored = self._store(name, "batch_output", ("\n".join(lines) + "\n").encode())
            batch.extra["error_file_id"] = stored.id


def _output_line(batch: FakeBatch, row: RowOutcome) -> dict[str, Any]:
    body = row.body
    if row.outcome == "errored" and not isinstance(body, dict):
        message = "scripted row failure"
        body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    return {
        "id": f"batch_req_{row.custom_id[:16]}",
        "custom_id": row.custom_id,
        "response": {"status_code": row.status, "request_id": f"req_{batch.id}", "body": body},
        "error": None,
    }


def _error_line(row: RowOutcome) -> dict[str, Any]:
    code = "batch_expired" if row.outcome == "expired" else "batch_cancelled"
    message = (
        "This request could not be executed before the completion window expired."
        if row.outcome == "expired"
        else "This request was not executed because the batch was cancelled."
    )
    return {
        "id": f"batch_req_{row.custom_id[:16]}",
        "custom_id": row.custom_id,
        "response": None,
        "error": {"code": code, "message": message},
    }
