"""OpenTelemetry observer: GenAI spans and metrics for every run (extra ``otel``).

Per run, an INTERNAL span ``run {prompt_id}``; under it one CLIENT span ``chat {model}`` per call to
the model (the first generation and each repair), carrying the OpenTelemetry GenAI semantic
convention attributes; each transport retry is an event on that span. Two histograms,
``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration``, are recorded per call.

Only ``opentelemetry-api`` is used: the application owns the SDK, its processors and exporters,
and passes providers in (or sets the global ones). What never reaches a span, an event or a
metric: an API key (the request's key is never read here), an error message (exception events
carry the error's code and class only), media bytes (a media part is its type, size and sha256).
Message content is recorded only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from scriptorium.errors import InvalidRequestError

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import Span, TracerProvider

    from scriptorium.llm.model import LLMRequest, LLMResponse
    from scriptorium.llm.retry import RetryInfo
    from scriptorium.observe.observer import GenerationKind
    from scriptorium.usecase.model import PreparedRun, RunResult

__all__ = ["CAPTURE_CONTENT_ENV", "OTelObserver"]

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CAPTURE_VALUES = ("1", "true", "yes", "on", "span_only", "span_and_event")
_SCOPE_NAME = "scriptorium"
# Bucket boundaries the GenAI conventions advise for the two histograms.
_TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304]
_DURATION_BUCKETS = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
]  # fmt: skip


def _error_type(error: BaseException) -> str:
    """The error's stable code for scriptorium errors, else its class name: never its text."""
    code = getattr(type(error), "code", None)
    return code if isinstance(code, str) else type(error).__qualname__


def _exception_event(span: Span, error: BaseException) -> None:
    """An ``exception`` event with the class and code only (``record_exception`` would add the
    message and a traceback, which may quote a server's error body)."""
    cls = type(error)
    span.add_event(
        "exception",
        {
            "exception.type": f"{cls.__module__}.{cls.__qualname__}",
            "error.type": _error_type(error),
        },
    )


def _part(part: Any) -> dict[str, Any]:
    text = getattr(part, "text", None)
    if isinstance(text, str):
        return {"type": "text", "content": text}
    return {
        "type": "media",
        "mime_type": getattr(part, "media_type", None),
        "size": getattr(part, "size", None),
        "sha256": getattr(part, "sha256", None),
    }


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    if isinstance(content, Sequence):
        return [_part(p) for p in content]
    return []


def _input_messages(request: LLMRequest) -> str:
    return json.dumps(
        [{"role": m.role, "parts": _parts(m.content)} for m in request.messages],
        ensure_ascii=False,
    )


class OTelObserver:
    """Emits OpenTelemetry spans and metrics for runs; give it to ``Engine(observer=...)``.

    ``tracer_provider`` / ``meter_provider`` default to the global ones. ``capture_content``
    defaults to what ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says in ``env``
    (default ``os.environ``), read once here.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        try:
            from opentelemetry import metrics, trace
        except ImportError as err:
            from scriptorium._version import install_hint

            raise InvalidRequestError(
                f"OTelObserver needs opentelemetry-api: {install_hint('otel')}", field="observer"
            ) from err
        from scriptorium._version import __version__

        if capture_content is None:
            values = os.environ if env is None else env
            capture_content = values.get(CAPTURE_CONTENT_ENV, "").strip().lower() in (
                _CAPTURE_VALUES
            )
        self.capture_content = capture_content
        self._trace = trace
        self._tracer = trace.get_tracer(_SCOPE_NAME, __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter(_SCOPE_NAME, __version__, meter_provider=meter_provider)
        self._tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self._duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )

    def __repr__(self) -> str:
        return f"OTelObserver(capture_content={self.capture_content})"

    def start_run(self, run_id: str, prompt_id: str) -> _RunSpan:
        return _RunSpan(self, run_id, prompt_id)


class _RunSpan:
    """The ``run {prompt_id}`` span and the context its chat spans are children of."""

    def __init__(self, owner: OTelObserver, run_id: str, prompt_id: str) -> None:
        trace = owner._trace
        self._owner = owner
        self._span = owner._tracer.start_span(
            f"run {prompt_id}",
            kind=trace.SpanKind.INTERNAL,
            attributes={"scriptorium.prompt_id": prompt_id, "scriptorium.run_id": run_id},
        )
        self._context = trace.set_span_in_context(self._span)

    def prepared(self, prepared: PreparedRun) -> None:
        self._span.set_attributes(
            {
                "scriptorium.request_hash": prepared.request_hash,
                "scriptorium.profile": prepared.profile,
                "gen_ai.provider.name": prepared.target.provider,
                "gen_ai.request.model": prepared.target.model,
            }
        )

    def generation(self, kind: GenerationKind, request: LLMRequest) -> _ChatSpan:
        return _ChatSpan(self._owner, self._context, kind, request)

    def end(self, result: RunResult | None, error: BaseException | None) -> None:
        span = self._span
        if result is not None:
            span.set_attributes(
                {
                    "scriptorium.validation.valid": result.validation.valid,
                    "scriptorium.attempts": len(result.attempts),
                    "scriptorium.cost_micro": result.usage.cost_micro,
                    "scriptorium.llm_calls": result.usage.llm_calls,
                }
            )
            if result.fallbacks:
                # The run fell back: the profile and request that answered, and how many left.
                prepared = result.prepared
                span.set_attributes(
                    {
                        "scriptorium.fallbacks": len(result.fallbacks),
                        "scriptorium.request_hash": prepared.request_hash,
                        "scriptorium.profile": prepared.profile,
                        "gen_ai.provider.name": prepared.target.provider,
                        "gen_ai.request.model": prepared.target.model,
                    }
                )
        if error is not None:
            kind = _error_type(error)
            span.set_attribute("error.type", kind)
            _exception_event(span, error)
            span.set_status(self._owner._trace.Status(self._owner._trace.StatusCode.ERROR, kind))
        span.end()


class _ChatSpan:
    """One ``chat {model}`` CLIENT span: a call to the model, retries included (INTERNAL, and no
    duration metric, for an answer read from a provider batch)."""

    def __init__(
        self, owner: OTelObserver, parent: Any, kind: GenerationKind, request: LLMRequest
    ) -> None:
        trace = owner._trace
        target = request.target
        self._owner = owner
        self._started = time.perf_counter()
        self._common: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": target.provider,
            "gen_ai.request.model": target.model,
        }
        attributes: dict[str, Any] = {
            **self._common,
            "gen_ai.request.max_tokens": request.settings.max_tokens,
            "scriptorium.generation.kind": kind,
        }
        if owner.capture_content:
            if request.system:
                attributes["gen_ai.system_instructions"] = json.dumps(
                    [{"type": "text", "content": request.system}], ensure_ascii=False
                )
            attributes["gen_ai.input.messages"] = _input_messages(request)
        # A batch answer was generated earlier, in the provider's batch: nothing is called now,
        # so its span is not a client call and its duration is not a client call's.
        self._timed = kind != "batch"
        self._span = owner._tracer.start_span(
            f"chat {target.model}".rstrip(),
            context=parent,
            kind=trace.SpanKind.CLIENT if self._timed else trace.SpanKind.INTERNAL,
            attributes=attributes,
        )

    def retry(self, info: RetryInfo) -> None:
        failure = info.failure
        attributes: dict[str, Any] = {
            "scriptorium.retry.attempt": info.attempt,
            "scriptorium.retry.delay_s": info.delay_s,
            "scriptorium.retry.reason": failure.reason,
        }
        if failure.http_status is not None:
            attributes["http.response.status_code"] = failure.http_status
        self._span.add_event("retry", attributes)

    def end(self, response: LLMResponse | None, error: BaseException | None) -> None:
        span = self._span
        metric_attributes = dict(self._common)
        if response is not None:
            usage = response.usage
            response_id = response.metadata.get("response_id") or response.metadata.get(
                "request_id"
            )
            attributes: dict[str, Any] = {
                "gen_ai.response.model": response.model or self._common["gen_ai.request.model"],
                "gen_ai.response.finish_reasons": (response.finish_reason,),
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                "gen_ai.usage.cache_read.input_tokens": usage.cache_read_input_tokens,
                "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_input_tokens,
                "scriptorium.cost_micro": usage.cost_micro,
                "scriptorium.llm_calls": response.attempts,
            }
            if isinstance(response_id, str) and response_id:
                attributes["gen_ai.response.id"] = response_id
            if usage.reasoning_tokens:  # known only where the provider reports it
                attributes["gen_ai.usage.reasoning_tokens"] = usage.reasoning_tokens
            if self._owner.capture_content:
                parts = [{"type": "text", "content": response.text}]
                if response.reasoning is not None:
                    parts.insert(0, {"type": "reasoning", "content": response.reasoning})
                attributes["gen_ai.output.messages"] = json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": parts,
                            "finish_reason": response.finish_reason,
                        }
                    ],
                    ensure_ascii=False,
                )
            span.set_attributes(attributes)
            metric_attributes["gen_ai.response.model"] = attributes["gen_ai.response.model"]
            for token_type, count in (
                ("input", usage.input_tokens),
                ("output", usage.output_tokens),
            ):
                self._owner._tokens.record(
                    count, {**metric_attributes, "gen_ai.token.type": token_type}
                )
        if error is not None:
            kind = _error_type(error)
            metric_attributes["error.type"] = kind
            span.set_attribute("error.type", kind)
            reason = getattr(error, "reason", None)
            if isinstance(reason, str):
                span.set_attribute("scriptorium.error.reason", reason)
            _exception_event(span, error)
            span.set_status(self._owner._trace.Status(self._owner._trace.StatusCode.ERROR, kind))
        if self._timed:
            self._owner._duration.record(time.perf_counter() - self._started, metric_attributes)
        span.end()
