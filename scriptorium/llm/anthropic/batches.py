"""Anthropic's Message Batches API (``client.messages.batches``) as a :class:`BatchProvider`.

Each row's ``params`` is the Messages API body the Anthropic adapter builds for a run of the same
request, so a batch row is exactly what a run would send; a succeeded row's message is read back by
the same adapter code a run's response is. Message batches keep no metadata, so the in-doubt
lookup matches on creation time and size, then on the custom ids (see ``state.match_in_doubt``).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from scriptorium._journal import jsonl_lines, load_json
from scriptorium.errors import InvalidRequestError
from scriptorium.llm.adapter import SDKFactory
from scriptorium.llm.anthropic.api import (
    BATCH_LIMITS,
    DEFAULT_BASE_URL,
    ERROR_STATUS,
    PRICES,
    PROVIDER,
)
from scriptorium.llm.anthropic.body import build_body
from scriptorium.llm.anthropic.call import Call
from scriptorium.llm.anthropic.sdk import classify, default_factory
from scriptorium.llm.batches.calls import SDKBatches, batch_args, batch_priced, check_row
from scriptorium.llm.batches.port import BatchLimits, Entry, RemoteBatch, RowResult
from scriptorium.llm.model import LLMRequest, LLMResponse
from scriptorium.llm.retry.http import classify_http
from scriptorium.llm.retry.policy import RetryHooks

__all__ = ["AnthropicBatches", "batches_for", "message_params"]


def message_params(request: LLMRequest) -> dict[str, Any]:
    """The Messages API body a run of ``request`` sends (model, max_tokens, system, messages,
    structured-output blocks, stop sequences): the adapter's own :func:`build_body`."""
    return build_body(request).body


def _epoch(value: Any) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str):
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return 0.0


def _remote(batch: Any) -> RemoteBatch:
    counts = batch.request_counts
    size = sum(
        int(getattr(counts, name, 0) or 0)
        for name in ("processing", "succeeded", "errored", "canceled", "expired")
    )
    return RemoteBatch(
        id=str(batch.id),
        ended=batch.processing_status == "ended",
        created_at=_epoch(batch.created_at),
        size=size,
        tag=None,
        status=str(batch.processing_status),
    )


def batches_for(
    request: LLMRequest, limits: BatchLimits | None, hooks: RetryHooks
) -> AnthropicBatches:
    """Message Batches for a run's request (the spec's ``batches``): on the Anthropic API only,
    since a cloud platform's batch jobs read and write its own storage."""
    platform = request.options.get("platform")
    if platform is not None:
        raise InvalidRequestError(
            f"provider batches are not built for anthropic on {platform}: its batch jobs read "
            "and write cloud storage (S3, Cloud Storage); run the rows without --provider-batch",
            field="options.platform",
        )
    return AnthropicBatches(**batch_args(request, limits, hooks))


class AnthropicBatches(SDKBatches):
    """Message Batches at ``base_url`` with ``key``; ``limits`` may be lowered (tests);
    ``sdk_factory`` builds the SDK client, as for :class:`~scriptorium.llm.anthropic.AnthropicClient`."""

    name = PROVIDER
    tagged = False

    def __init__(
        self,
        *,
        key: str,
        base_url: str | None = None,
        limits: BatchLimits | None = None,
        hooks: RetryHooks | None = None,
        sdk_factory: SDKFactory | None = None,
        model: str = "",
    ) -> None:
        super().__init__(
            provider=PROVIDER,
            key=key,
            base_url=base_url or DEFAULT_BASE_URL,
            limits=limits or BATCH_LIMITS,
            hooks=hooks,
            classify=classify,
            make_client=sdk_factory or default_factory,
            model=model,
            default_base_url=DEFAULT_BASE_URL,
        )

    def entry(self, custom_id: str, request: LLMRequest) -> Entry:
        data = {"custom_id": custom_id, "params": message_params(request)}
        size = len(json.dumps(data, ensure_ascii=False).encode("utf-8"))
        return Entry(custom_id, data, size)

    def create(self, entries: list[Entry], tag: str) -> RemoteBatch:
        batches = self._client().messages.batches
        requests = [e.data for e in entries]
        return _remote(self._calls.create(lambda t: batches.create(requests=requests, timeout=t)))

    def retrieve(self, batch_id: str) -> RemoteBatch:
        batches = self._client().messages.batches
        return _remote(self._calls.read(lambda t: batches.retrieve(batch_id, timeout=t)))

    def recent(self, since: float) -> list[RemoteBatch]:
        batches = self._client().messages.batches
        return self.listed_since(since, batches.list, "after_id", _remote)

    def results(self, batch_id: str) -> list[RowResult]:
        batches = self._client().messages.batches

        def read(timeout: float) -> bytes:
            raw = batches.with_raw_response.results(batch_id, timeout=timeout)
            return bytes(raw.http_response.read())

        content = self._calls.read(read)
        rows = []
        for _, line in jsonl_lines(content.decode("utf-8")):
            if line.strip():
                rows.append(_row(load_json(line)))
        return rows

    def cancel(self, batch_id: str) -> None:
        batches = self._client().messages.batches
        self._calls.read(lambda t: batches.cancel(batch_id, timeout=t))

    def response(self, request: LLMRequest, row: RowResult) -> LLMResponse:
        check_row(row, PROVIDER, request.target.model, classify_http)
        call = Call(request)
        body = call.read(json.dumps(row.body).encode("utf-8"))
        return batch_priced(call.answer((body, {}), 1, 0.0), request, {}, PRICES)


def _row(line: Any) -> RowResult:
    custom_id = str(line.get("custom_id"))
    result = line.get("result") or {}
    kind = result.get("type")
    if kind == "succeeded":
        return RowResult(custom_id, "succeeded", result.get("message"))
    if kind == "errored":
        error = result.get("error") or {}
        found = error.get("error")
        inner: dict[str, Any] = found if isinstance(found, dict) else {}
        status = ERROR_STATUS.get(str(inner.get("type")), 500)
        return RowResult(custom_id, "errored", error, status)
    if kind in ("expired", "canceled"):
        return RowResult(custom_id, kind)
    return RowResult(custom_id, "errored", {"error": {"message": f"unknown result {kind!r}"}}, 500)
