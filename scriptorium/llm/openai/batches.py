"""OpenAI's Batch API as a :class:`BatchProvider`: rows are uploaded as a JSONL file
(``files.create(purpose="batch")``) and a batch is created over it (``batches.create``).

Each row's ``body`` is the Chat Completions body the OpenAI adapter builds for a run
(:func:`scriptorium.llm.openai.body.build_params`), and a completed row is read back by the
adapter's own :func:`~scriptorium.llm.openai.call.read_completion`. A batch holds one model, so
rows are grouped by model. Batches carry our chunk tag in ``metadata``, which makes the
in-doubt lookup exact.
"""

from __future__ import annotations

import json
from typing import Any

from scriptorium._journal import jsonl_lines, load_json
from scriptorium.llm.adapter import SDKFactory
from scriptorium.llm.batches.calls import SDKBatches, batch_args, batch_priced, check_row
from scriptorium.llm.batches.port import BatchLimits, Entry, RemoteBatch, RowResult
from scriptorium.llm.model import LLMRequest, LLMResponse
from scriptorium.llm.openai.api import BATCH_LIMITS, DEFAULT_BASE_URL, PRICES, PROVIDER
from scriptorium.llm.openai.apis import api_of
from scriptorium.llm.openai.azure import (
    BATCH_ENDPOINT,
    RESPONSES_BATCH_ENDPOINT,
    Deployment,
    azure_client,
    deployment_of,
)
from scriptorium.llm.openai.body import build_params, openai_strategy
from scriptorium.llm.openai.call import azure_cost, read_completion
from scriptorium.llm.openai.responses_body import build_responses_params
from scriptorium.llm.openai.responses_call import read_response
from scriptorium.llm.openai.sdk import classify, default_factory
from scriptorium.llm.retry.http import classify_http
from scriptorium.llm.retry.policy import RetryHooks

__all__ = ["ENDPOINT", "RESPONSES_ENDPOINT", "TAG_KEY", "OpenAIBatches", "batches_for"]

#: The endpoint each batch row is for (the batch API names it with its /v1): Chat Completions,
#: or the Responses API for a request that travels on it (``options.api``).
ENDPOINT = "/v1/chat/completions"
RESPONSES_ENDPOINT = "/v1/responses"
#: The ``metadata`` key holding our chunk tag.
TAG_KEY = "scriptorium_chunk"
_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})


def _remote(batch: Any) -> RemoteBatch:
    counts = batch.request_counts
    metadata = batch.metadata or {}
    return RemoteBatch(
        id=str(batch.id),
        ended=batch.status in _ENDED,
        created_at=float(batch.created_at),
        size=int(counts.total) if counts is not None else 0,
        tag=metadata.get(TAG_KEY),
        status=str(batch.status),
    )


def _lines(content: bytes) -> list[dict[str, Any]]:
    out = []
    for _, line in jsonl_lines(content.decode("utf-8")):
        if line.strip():
            value = load_json(line)
            if isinstance(value, dict):
                out.append(value)
    return out


def batches_for(
    request: LLMRequest, limits: BatchLimits | None, hooks: RetryHooks
) -> OpenAIBatches:
    """The Batch API for a run's request (the spec's ``batches``): OpenAI's, a compatible
    server's, or an Azure deployment's."""
    return OpenAIBatches(**batch_args(request, limits, hooks), deployment=deployment_of(request))


class OpenAIBatches(SDKBatches):
    """The Batch API at ``base_url`` (ending in ``/v1``) with ``key``; ``sdk_factory`` builds the
    SDK client, as for :class:`~scriptorium.llm.openai.OpenAIClient`."""

    name = PROVIDER
    tagged = True

    def __init__(
        self,
        *,
        key: str,
        base_url: str | None = None,
        limits: BatchLimits | None = None,
        hooks: RetryHooks | None = None,
        sdk_factory: SDKFactory | None = None,
        model: str = "",
        deployment: Deployment | None = None,
    ) -> None:
        make_client = sdk_factory or default_factory
        if deployment is not None:
            # Azure's Batch API under the resource's /openai path, through the deployment's
            # AzureOpenAI client (its api-version and credential).
            base_url = deployment.endpoint

            def make_client(is_async: bool, key: str, _base_url: str) -> Any:
                return azure_client(is_async, key, deployment)

        super().__init__(
            provider=PROVIDER,
            key=key,
            base_url=base_url or DEFAULT_BASE_URL,
            limits=limits or BATCH_LIMITS,
            hooks=hooks,
            classify=classify,
            make_client=make_client,
            model=model,
            default_base_url=DEFAULT_BASE_URL,
        )
        self._deployment = deployment
        #: The endpoint of each API's rows and batches (Azure's have no /v1).
        self.endpoints = (
            {"chat": ENDPOINT, "responses": RESPONSES_ENDPOINT}
            if deployment is None
            else {"chat": BATCH_ENDPOINT, "responses": RESPONSES_BATCH_ENDPOINT}
        )

    def entry(self, custom_id: str, request: LLMRequest) -> Entry:
        api = api_of(request)
        params, _ = (build_responses_params if api == "responses" else build_params)(request)
        url = self.endpoints[api]
        data = {"custom_id": custom_id, "method": "POST", "url": url, "body": params}
        size = len(json.dumps(data, ensure_ascii=False).encode("utf-8")) + 1
        # A batch holds one model and one endpoint.
        return Entry(custom_id, data, size, group=f"{params.get('model', '')}\n{url}")

    def create(self, entries: list[Entry], tag: str) -> RemoteBatch:
        client = self._client()
        endpoint = str(entries[0].data["url"]) if entries else self.endpoints["chat"]
        content = "".join(json.dumps(e.data, ensure_ascii=False) + "\n" for e in entries)
        upload = (f"scriptorium-{tag}.jsonl", content.encode("utf-8"))
        # An upload is free and unbilled, so it may be retried; the batch create is sent once.
        stored = self._calls.read(
            lambda t: client.files.create(file=upload, purpose="batch", timeout=t)
        )
        batch = self._calls.create(
            lambda t: client.batches.create(
                input_file_id=stored.id,
                endpoint=endpoint,
                completion_window="24h",
                metadata={TAG_KEY: tag},
                timeout=t,
            )
        )
        return _remote(batch)

    def retrieve(self, batch_id: str) -> RemoteBatch:
        return _remote(self._retrieve(batch_id))

    def _retrieve(self, batch_id: str) -> Any:
        batches = self._client().batches
        return self._calls.read(lambda t: batches.retrieve(batch_id, timeout=t))

    def recent(self, since: float) -> list[RemoteBatch]:
        return self.listed_since(since, self._client().batches.list, "after", _remote)

    def _content(self, file_id: str) -> bytes:
        files = self._client().files
        return bytes(self._calls.read(lambda t: files.content(file_id, timeout=t)).content)

    def results(self, batch_id: str) -> list[RowResult]:
        batch = self._retrieve(batch_id)
        rows: dict[str, RowResult] = {}
        if batch.output_file_id:
            for line in _lines(self._content(batch.output_file_id)):
                rows[str(line.get("custom_id"))] = _output_row(line)
        if batch.error_file_id:
            for line in _lines(self._content(batch.error_file_id)):
                rows.setdefault(str(line.get("custom_id")), _error_row(line))
        # Rows in neither file never ran: the batch failed validation, expired or was canceled.
        missing: RowResult | None = None
        for line in _lines(self._content(batch.input_file_id)):
            custom_id = str(line.get("custom_id"))
            if custom_id in rows:
                continue
            if batch.status == "expired":
                rows[custom_id] = RowResult(custom_id, "expired")
            elif batch.status == "cancelled":
                rows[custom_id] = RowResult(custom_id, "canceled")
            else:
                missing = missing or _failed_row(batch)
                rows[custom_id] = RowResult(custom_id, "errored", missing.body, missing.status)
        return list(rows.values())

    def cancel(self, batch_id: str) -> None:
        batches = self._client().batches
        self._calls.read(lambda t: batches.cancel(batch_id, timeout=t))

    def response(self, request: LLMRequest, row: RowResult) -> LLMResponse:
        model = request.target.model
        check_row(row, PROVIDER, model, classify_http)
        # The strategy the row was built with, without building its body again.
        strategy = openai_strategy(request.structured_output)
        raw = json.dumps(row.body).encode("utf-8")
        api = api_of(request)
        read = read_response if api == "responses" else read_completion
        (text, finish, usage, metadata), reasoning = read(raw, strategy)
        metadata.update({"provider": PROVIDER, "strategy": strategy})
        if api != "chat":
            metadata["api"] = api
        response = LLMResponse(
            text=text,
            reasoning=reasoning,
            model=metadata.get("response_model") or model,
            finish_reason=finish,
            usage=usage,
            metadata=metadata,
        )
        priced = batch_priced(response, request, {}, PRICES)
        if self._deployment is None:
            return priced
        reported = metadata.get("response_model")
        cost, note = azure_cost(request, response.usage, reported, batch=True)
        shown = {k: v for k, v in priced.metadata.items() if k != "pricing"}
        if note:
            shown["pricing"] = note
        usage = priced.usage.model_copy(update={"cost_micro": cost})
        return priced.model_copy(update={"usage": usage, "metadata": shown})


def _output_row(line: dict[str, Any]) -> RowResult:
    custom_id = str(line.get("custom_id"))
    response = line.get("response")
    if not isinstance(response, dict):
        return _error_row(line)
    status = response.get("status_code")
    status = status if isinstance(status, int) else 500
    if status == 200:
        return RowResult(custom_id, "succeeded", response.get("body"))
    return RowResult(custom_id, "errored", response.get("body"), status)


def _error_row(line: dict[str, Any]) -> RowResult:
    custom_id = str(line.get("custom_id"))
    found = line.get("error")
    error: dict[str, Any] = found if isinstance(found, dict) else {}
    code = error.get("code")
    if code == "batch_expired":
        return RowResult(custom_id, "expired")
    if code == "batch_cancelled":
        return RowResult(custom_id, "canceled")
    return RowResult(custom_id, "errored", {"error": error}, 500)


def _failed_row(batch: Any) -> RowResult:
    errors = getattr(batch.errors, "data", None) or []
    text = "; ".join(str(getattr(e, "message", e)) for e in errors) or "the batch failed"
    body = {"error": {"message": text, "type": "invalid_request_error", "code": None}}
    return RowResult("", "errored", body, 400)
