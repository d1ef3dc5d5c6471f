"""The Batch Mode and Files endpoints of ``FakeGeminiServer``, in the shapes the ``google-genai``
SDK sends and reads: ``POST /<version>/models/M:batchGenerateContent`` (inline requests or an
uploaded file), ``GET /<version>/batches/ID`` (a long-running operation, ``done`` with its
output once the batch ended), ``GET /<version>/batches`` (newest first), ``POST
/<version>/batches/ID:cancel``; the resumable upload (``POST /upload/<version>/files``, then the
upload URL it hands out) and ``files/ID:download``. A batch created inline answers inline
(``inlinedResponses``), one created from a file answers with a results file
(``responsesFile``); rows scripted to expire or be cancelled are missing from both, and the batch
ends ``BATCH_STATE_EXPIRED`` / ``BATCH_STATE_CANCELLED``."""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from scriptorium._journal import jsonl_lines, load_json
from scriptorium._testing.batches import FakeBatch, FakeBatches, RowOutcome
from scriptorium._testing.http import Answer, RecordedRequest

__all__ = ["GeminiBatchRoutes"]

_CREATE = re.compile(r"^/[^/]+/models/(?P<model>[^/:]+):batchGenerateContent$")
_BATCH = re.compile(r"^/[^/]+/(?P<id>batches/[A-Za-z0-9_-]+)(?P<cancel>:cancel)?$")
_LIST = re.compile(r"^/[^/]+/batches$")
_UPLOAD = re.compile(r"^/upload/[^/]+/files$")
_DOWNLOAD = re.compile(r"^(?:/download)?/[^/]+/files/(?P<id>[a-z0-9]+):download$")
_STATE_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch"


def _error(status: int, message: str) -> Answer:
    names = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND"}
    body = {"error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}}
    return Answer.json(body, status)


def _time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


class GeminiBatchRoutes:
    """Answers the Batch Mode and Files routes for one server (``base_url`` names it, for the
    upload URL it hands out)."""

    def __init__(self, batches: FakeBatches, base_url: Callable[[], str]) -> None:
        self.batches = batches
        self._base_url = base_url
        #: Uploaded and result files: name -> bytes.
        self.files: dict[str, bytes] = {}
        #: The model each submitted custom id was batched for (its answer names it).
        self.models: dict[str, str] = {}
        self._uploads: dict[str, bytes | None] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self.files.clear()
            self.models.clear()
            self._uploads.clear()

    def answer(self, request: RecordedRequest) -> Answer | None:
        path = request.path.split("?")[0]
        if request.method == "POST" and (found := _CREATE.match(path)):
            self.batches.wait()
            return self._create(found.group("model"), request.body)
        if request.method == "GET" and _LIST.match(path):
            self.batches.wait()
            return self._list()
        if found := _BATCH.match(path):
            self.batches.wait()
            return self._batch(found.group("id"), cancel=bool(found.group("cancel")))
        if request.method == "POST" and _UPLOAD.match(path):
            return self._upload(request)
        if request.method == "GET" and (found := _DOWNLOAD.match(path)):
            content = self.files.get(f"files/{found.group('id')}")
            if content is None:
                return _error(404, "no such file")
            return Answer(200, content, content_type="application/octet-stream")
        return None

    # --- files -----------------------------------------------------------------------------------

    def _upload(self, request: RecordedRequest) -> Answer:
        command = request.headers.get("x-goog-upload-command", "")
        query = request.path.partition("?")[2]
        if "start" in command:
            with self._lock:
                upload = f"u{next(self._ids)}"
                self._uploads[upload] = None
            url = f"{self._base_url()}/upload/v1beta/files?upload_id={upload}"
            return Answer.json({}, headers={"x-goog-upload-url": url})
        upload = query.removeprefix("upload_id=")
        with self._lock:
            if upload not in self._uploads:
                return _error(400, "no such upload")
            name = f"files/in{next(self._ids):04d}"
            self.files[name] = request.raw
        view = {"name": name, "mimeType": "application/jsonl", "sizeBytes": str(len(request.raw))}
        view["state"] = "ACTIVE"
        return Answer.json({"file": view}, headers={"x-goog-upload-status": "final"})

    # --- batches ---------------------------------------------------------------------------------

    def _create(self, model: str, body: Any) -> Answer:
        batch = body.get("batch") if isinstance(body, dict) else None
        if not isinstance(batch, dict):
            return _error(400, "batch is required")
        found = batch.get("inputConfig")
        config: dict[str, Any] = found if isinstance(found, dict) else {}
        rows: list[tuple[str, Any]] = []
        source = "inline"
        if isinstance(config.get("requests"), dict):
            for item in config["requests"].get("requests") or []:
                meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
                rows.append((str(meta.get("key")), item.get("request")))
        elif isinstance(config.get("fileName"), str):
            content = self.files.get(config["fileName"])
            if content is None:
                return _error(400, "no such input file")
            source = "file"
            for _, line in jsonl_lines(content.decode("utf-8")):
                if line.strip():
                    item = load_json(line)
                    rows.append((str(item.get("key")), item.get("request")))
        else:
            return _error(400, "inputConfig needs requests or fileName")
        with self._lock:
            for key, _ in rows:
                self.models[key] = model
        extra = {
            "model": model,
            "source": source,
            "displayName": batch.get("displayName"),
            "inputConfig": config,
        }
        created = self.batches.create(rows, extra=extra)
        return Answer.json(self._operation(created))

    def _view(self, batch: FakeBatch) -> dict[str, Any]:
        ident = batch.id
        counts = batch.counts()
        if not batch.ended:
            state = "BATCH_STATE_RUNNING"
        elif counts.get("canceled"):
            state = "BATCH_STATE_CANCELLED"
        elif counts.get("expired"):
            state = "BATCH_STATE_EXPIRED"
        else:
            state = "BATCH_STATE_SUCCEEDED"
        view: dict[str, Any] = {
            "@type": _STATE_TYPE,
            "name": ident,
            "model": f"models/{batch.extra['model']}",
            "displayName": batch.extra.get("displayName"),
            "inputConfig": batch.extra.get("inputConfig"),
            "createTime": _time(batch.created_at),
            "state": state,
            "batchStats": {
                "requestCount": str(len(batch.rows)),
                "successfulRequestCount": str(counts.get("succeeded", 0)),
                "failedRequestCount": str(counts.get("errored", 0)),
                "pendingRequestCount": str(counts.get("processing", 0)),
            },
        }
        return view

    def _operation(self, batch: FakeBatch) -> dict[str, Any]:
        operation: dict[str, Any] = {"name": batch.id, "metadata": self._view(batch)}
        if batch.ended:
            # The SDK reads the output from the batch (``metadata.output``); the operation's
            # ``response`` carries it too.
            output = self._output(batch)
            operation["metadata"]["output"] = output
            operation["done"] = True
            operation["response"] = output
        return operation

    def _output(self, batch: FakeBatch) -> dict[str, Any]:
        answered = [r for r in self.batches.ordered(batch) if r.outcome in ("succeeded", "errored")]
        lines = [self._line(r) for r in answered]
        if batch.extra.get("source") == "file":
            name = f"files/out{batch.id.rsplit('-', 1)[-1]}"
            if name not in self.files:
                content = "".join(json.dumps(line) + "\n" for line in lines)
                self.files[name] = content.encode("utf-8")
            return {"responsesFile": name}
        inlined = [
            {**{k: v for k, v in line.items() if k != "key"}, "metadata": {"key": line["key"]}}
            for line in lines
        ]
        return {"inlinedResponses": {"inlinedResponses": inlined}}

    @staticmethod
    def _line(row: RowOutcome) -> dict[str, Any]:
        if row.outcome == "succeeded":
            return {"key": row.custom_id, "response": row.body}
        error = row.body.get("error") if isinstance(row.body, dict) else None
        if not isinstance(error, dict):
            error = {
                "code": row.status,
                "message": "scripted row failure",
                "status": "INVALID_ARGUMENT",
            }
        return {"key": row.custom_id, "error": error}

    def _batch(self, ident: str, *, cancel: bool) -> Answer:
        batch = self.batches.get(ident)
        if batch is None:
            return _error(404, f"no batch {ident}")
        if cancel:
            self.batches.cancel(batch)
            return Answer.json({})
        return Answer.json(self._operation(self.batches.poll(batch)))

    def _list(self) -> Answer:
        listed = [self._operation(b) for b in self.batches.newest_first()]
        return Answer.json({"operations": listed})
