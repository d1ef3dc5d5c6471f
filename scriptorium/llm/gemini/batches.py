"""Gemini Batch Mode as a :class:`BatchProvider`: ``models/M:batchGenerateContent``, half price.

Each row's ``request`` is the ``generateContent`` body the adapter builds for a run of the same
request (:class:`~scriptorium.llm.gemini.call.Call`), keyed by the custom id; a succeeded row's
response is read back by the adapter's own :func:`~scriptorium.llm.gemini.call.read_answer` and
priced as a run is (long-context tier included), at the batch rate. A batch holds one model, so
rows are grouped by model.

Rows go inline (``inputConfig.requests``) while the batch request stays under Gemini's inline
limit (:data:`~scriptorium.llm.gemini.api.INLINE_BATCH_BYTES`); above it they are uploaded as a
JSONL file through the SDK's Files API (``{"key", "request"}`` per line) and the batch names the
file. Results come back inline, or as a JSONL file downloaded through the SDK. Our chunk tag is
the batch's ``displayName``, which makes the in-doubt lookup exact.

Requests go through the SDK's request layer, as the adapter's do (:mod:`.sdk`). Batch Mode is the
Gemini API's; Vertex AI's batch prediction (Cloud Storage or BigQuery in and out) is not offered.
"""

from __future__ import annotations

import io
import json
from datetime import datetime
from typing import Any

from scriptorium._journal import jsonl_lines, load_json
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.adapter import SDKFactory, key_of
from scriptorium.llm.batches.calls import SDKBatches, batch_priced, check_row, recent_batches
from scriptorium.llm.batches.port import BatchLimits, Entry, RemoteBatch, RowResult
from scriptorium.llm.gemini.api import (
    BATCH_LIMITS,
    INLINE_BATCH_BYTES,
    PROVIDER,
    Place,
    place_of,
    price_of,
)
from scriptorium.llm.gemini.call import Call, read_answer
from scriptorium.llm.gemini.sdk import classify, default_factory, error_failure
from scriptorium.llm.model import LLMRequest, LLMResponse
from scriptorium.llm.retry.policy import RetryHooks

__all__ = ["GeminiBatches", "batches_for"]

_ENDED = frozenset(
    {"BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED", "BATCH_STATE_EXPIRED"}
)


def _epoch(value: Any) -> float:
    if not isinstance(value, str):
        return 0.0
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _batch_of(operation: Any) -> dict[str, Any]:
    """The ``GenerateContentBatch`` an operation (or a bare batch) describes."""
    if not isinstance(operation, dict):
        return {}
    meta = operation.get("metadata")
    batch = dict(meta) if isinstance(meta, dict) else dict(operation)
    batch.setdefault("name", operation.get("name"))
    if "response" in operation and "output" not in batch:
        batch["output"] = operation["response"]
    return batch


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _remote(operation: Any) -> RemoteBatch:
    batch = _batch_of(operation)
    state = str(batch.get("state", ""))
    stats = _dict(batch.get("batchStats"))
    tag = batch.get("displayName")
    return RemoteBatch(
        id=str(batch.get("name", "")),
        ended=state in _ENDED,
        created_at=_epoch(batch.get("createTime")),
        size=_int(stats.get("requestCount")),
        tag=tag if isinstance(tag, str) else None,
        status=state,
    )


def _json(body: Any) -> Any:
    if isinstance(body, bytes | str):
        return load_json(body) if body else {}
    return body


def batches_for(
    request: LLMRequest, limits: BatchLimits | None, hooks: RetryHooks
) -> GeminiBatches:
    """The batch API for a run's request (the spec's ``batches``)."""
    place = place_of(request.target.endpoint, request.options)
    if place.vertexai:
        raise LLMGenerateError(
            "gemini: provider batches are Gemini Batch Mode, on the Gemini API; a Vertex AI "
            "profile has none here (use the Gemini API, or run the rows as a local batch)",
            reason="config",
            provider=PROVIDER,
            model=request.target.model,
        )
    return GeminiBatches(
        key=key_of(request), place=place, limits=limits, hooks=hooks, model=request.target.model
    )


class GeminiBatches(SDKBatches):
    """Batch Mode at ``place`` with ``key``; ``inline_bytes`` is the size above which rows go
    as a file (lowered in tests); ``sdk_factory`` builds the SDK client, as for
    :class:`~scriptorium.llm.gemini.client.GeminiClient`."""

    name = PROVIDER
    tagged = True

    def __init__(
        self,
        *,
        key: str,
        place: Place | None = None,
        limits: BatchLimits | None = None,
        hooks: RetryHooks | None = None,
        sdk_factory: SDKFactory | None = None,
        model: str = "",
        inline_bytes: int = INLINE_BATCH_BYTES,
    ) -> None:
        place = place or Place()
        super().__init__(
            provider=PROVIDER,
            key=key,
            base_url=place.slot(),
            limits=limits or BATCH_LIMITS,
            hooks=hooks,
            classify=classify,
            make_client=sdk_factory or default_factory,
            model=model,
            default_base_url=Place().slot(),
        )
        self.inline_bytes = inline_bytes

    # --- rows ------------------------------------------------------------------------------------

    def entry(self, custom_id: str, request: LLMRequest) -> Entry:
        call = Call(request)
        data = {"key": custom_id, "request": call.body}
        size = len(json.dumps(data, ensure_ascii=False).encode("utf-8")) + 1
        return Entry(custom_id, data, size, group=call.path)

    def response(self, request: LLMRequest, row: RowResult) -> LLMResponse:
        model = request.target.model
        check_row(row, PROVIDER, model, error_failure)
        answer = read_answer(row.body)
        call = Call(request)
        response = call.answer(answer, 1, 0.0)
        found = price_of(model, answer.prompt_tokens)
        prices = {} if found is None else {model.strip().lower(): found[1]}
        return batch_priced(response, request, {}, prices)

    # --- the API ---------------------------------------------------------------------------------

    def create(self, entries: list[Entry], tag: str) -> RemoteBatch:
        sdk = self._client()
        path = f"{entries[0].group}:batchGenerateContent"
        inline = [{"request": e.data["request"], "metadata": {"key": e.custom_id}} for e in entries]
        batch: dict[str, Any] = {
            "displayName": tag,
            "inputConfig": {"requests": {"requests": inline}},
        }
        if sum(e.size for e in entries) > self.inline_bytes:
            content = "".join(json.dumps(e.data, ensure_ascii=False) + "\n" for e in entries)
            upload = io.BytesIO(content.encode("utf-8"))
            config = {"mime_type": "application/jsonl", "display_name": f"scriptorium-{tag}"}
            # An upload is free and unbilled, so it may be retried; the batch create is sent once.
            stored = self._calls.read(
                lambda t: sdk.client.files.upload(file=_rewound(upload), config=config)
            )
            batch["inputConfig"] = {"fileName": str(stored.name)}
        body = {"batch": batch}
        reply = self._calls.create(
            lambda t: sdk.api.request("post", path, dict(body), {"timeout": _ms(t)})
        )
        return _remote(_json(reply.body))

    def _get(self, batch_id: str) -> dict[str, Any]:
        sdk = self._client()
        reply = self._calls.read(
            lambda t: sdk.api.request("get", batch_id, {}, {"timeout": _ms(t)})
        )
        body = _json(reply.body)
        return body if isinstance(body, dict) else {}

    def retrieve(self, batch_id: str) -> RemoteBatch:
        return _remote(self._get(batch_id))

    def recent(self, since: float) -> list[RemoteBatch]:
        sdk = self._client()

        def page(token: str | None) -> tuple[list[RemoteBatch], str | None]:
            path = "batches?pageSize=100" + (f"&pageToken={token}" if token else "")
            reply = self._calls.read(
                lambda t: sdk.api.request("get", path, {}, {"timeout": _ms(t)})
            )
            listed = _json(reply.body)
            listed = listed if isinstance(listed, dict) else {}
            operations = listed.get("operations") or listed.get("batches") or []
            following = listed.get("nextPageToken")
            items = [_remote(o) for o in operations if isinstance(o, dict)]
            return items, (following if following else None)

        return recent_batches(page, since)

    def results(self, batch_id: str) -> list[RowResult]:
        batch = _batch_of(self._get(batch_id))
        state = str(batch.get("state", ""))
        output = _dict(batch.get("output"))
        lines: list[dict[str, Any]] = []
        inlined = output.get("inlinedResponses")
        if isinstance(inlined, dict):
            inlined = inlined.get("inlinedResponses")
        if isinstance(inlined, list):
            for item in inlined:
                if isinstance(item, dict):
                    meta = _dict(item.get("metadata"))
                    lines.append({**item, "key": meta.get("key", item.get("key"))})
        responses_file = output.get("responsesFile")
        if isinstance(responses_file, str) and responses_file:
            lines.extend(self._file_lines(responses_file))
        rows: dict[str, RowResult] = {}
        for line in lines:
            key = str(line.get("key"))
            error = line.get("error")
            if isinstance(error, dict):
                code = error.get("code")
                status = code if isinstance(code, int) and code >= 400 else 500
                rows[key] = RowResult(key, "errored", {"error": error}, status)
            else:
                rows[key] = RowResult(key, "succeeded", line.get("response"))
        # Rows with no result never ran: the batch expired, was cancelled, or failed whole.
        for key in self._keys(batch):
            if key in rows:
                continue
            if state == "BATCH_STATE_EXPIRED":
                rows[key] = RowResult(key, "expired")
            elif state == "BATCH_STATE_CANCELLED":
                rows[key] = RowResult(key, "canceled")
            else:
                error = _dict(batch.get("error"))
                rows[key] = RowResult(key, "errored", {"error": error or {"code": 500}}, 500)
        return list(rows.values())

    def _keys(self, batch: dict[str, Any]) -> list[str]:
        """The custom ids the batch was created with (inline requests, or its input file)."""
        config = _dict(batch.get("inputConfig"))
        requests = config.get("requests")
        if isinstance(requests, dict):
            listed = requests.get("requests") or []
            return [str(_dict(r.get("metadata")).get("key")) for r in listed if isinstance(r, dict)]
        name = config.get("fileName")
        if isinstance(name, str) and name:
            return [str(line.get("key")) for line in self._file_lines(name)]
        return []

    def _file_lines(self, name: str) -> list[dict[str, Any]]:
        sdk = self._client()
        content = self._calls.read(lambda t: sdk.client.files.download(file=name))
        out: list[dict[str, Any]] = []
        for _, line in jsonl_lines(bytes(content).decode("utf-8")):
            if line.strip():
                value = load_json(line)
                if isinstance(value, dict):
                    out.append(value)
        return out

    def cancel(self, batch_id: str) -> None:
        sdk = self._client()
        self._calls.read(
            lambda t: sdk.api.request("post", f"{batch_id}:cancel", {}, {"timeout": _ms(t)})
        )


def _rewound(stream: io.BytesIO) -> io.BytesIO:
    stream.seek(0)
    return stream


def _ms(timeout_s: float) -> int:
    return max(1, int(timeout_s * 1000))
