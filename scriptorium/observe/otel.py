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
from urllib.parse import urlsplit

from scriptorium.errors import InvalidRequestError

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import Span, TracerProvider

    from scriptorium.llm.model import LLMRequest, LLMResponse, Target
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
    from opentelemetry.semconv.attributes import error_attributes, exception_attributes

    cls = type(error)
    span.add_event(
        "exception",
        {
            exception_attributes.EXCEPTION_TYPE: f"{cls.__module__}.{cls.__qualname__}",
            error_attributes.ERROR_TYPE: _error_type(error),
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


class _Names:
    """The attribute names and values of the OpenTelemetry semantic conventions this observer
    writes, read from the ``opentelemetry-semantic-conventions`` package (the version the ``otel``
    extra pins), never typed by hand: the GenAI conventions are incubating and move."""

    def __init__(self) -> None:
        from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
        from opentelemetry.semconv.attributes import error_attributes, server_attributes

        self.gen_ai = gen_ai
        self.operation = gen_ai.GEN_AI_OPERATION_NAME
        self.chat = gen_ai.GenAiOperationNameValues.CHAT.value
        self.provider = gen_ai.GEN_AI_PROVIDER_NAME
        self.request_model = gen_ai.GEN_AI_REQUEST_MODEL
        self.response_model = gen_ai.GEN_AI_RESPONSE_MODEL
        self.output_type = gen_ai.GEN_AI_OUTPUT_TYPE
        self.token_type = gen_ai.GEN_AI_TOKEN_TYPE
        self.input_messages = gen_ai.GEN_AI_INPUT_MESSAGES
        self.output_messages = gen_ai.GEN_AI_OUTPUT_MESSAGES
        self.system_instructions = gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS
        self.server_address = server_attributes.SERVER_ADDRESS
        self.server_port = server_attributes.SERVER_PORT
        self.error_type = error_attributes.ERROR_TYPE
        #: Request settings as sent, by the setting's name.
        self.request = {
            "max_tokens": gen_ai.GEN_AI_REQUEST_MAX_TOKENS,
            "temperature": gen_ai.GEN_AI_REQUEST_TEMPERATURE,
            "top_p": gen_ai.GEN_AI_REQUEST_TOP_P,
            "top_k": gen_ai.GEN_AI_REQUEST_TOP_K,
            "stop_sequences": gen_ai.GEN_AI_REQUEST_STOP_SEQUENCES,
        }
        #: Usage counts by ``Usage`` field.
        self.usage = {
            "input_tokens": gen_ai.GEN_AI_USAGE_INPUT_TOKENS,
            "output_tokens": gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS,
            "cache_read_input_tokens": gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
            "cache_creation_input_tokens": gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
        }
        self.reasoning_tokens = gen_ai.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS
        self.response_id = gen_ai.GEN_AI_RESPONSE_ID
        self.finish_reasons = gen_ai.GEN_AI_RESPONSE_FINISH_REASONS
        names = gen_ai.GenAiProviderNameValues
        #: The conventions' provider name by (provider, platform): the route a call takes.
        self.providers: dict[tuple[str, str | None], str] = {
            ("anthropic", None): names.ANTHROPIC.value,
            ("anthropic", "bedrock"): names.AWS_BEDROCK.value,
            ("anthropic", "vertex"): names.GCP_VERTEX_AI.value,
            ("openai", None): names.OPENAI.value,
            ("openai", "azure"): names.AZURE_AI_OPENAI.value,
            ("gemini", None): names.GCP_GEMINI.value,
            ("gemini", "vertex"): names.GCP_VERTEX_AI.value,
        }
        outputs = gen_ai.GenAiOutputTypeValues
        self.text = outputs.TEXT.value
        self.json = outputs.JSON.value

    def provider_name(self, target: Target) -> str:
        """The conventions' name of the provider serving ``target`` (a provider they do not
        name, such as ``fake`` or a plugin's, as it is called here)."""
        return self.providers.get((target.provider, target.platform), target.provider)


#: Where each route's API is when a profile names no endpoint, for ``server.address``/``port``.
_DEFAULT_HOSTS: dict[tuple[str, str | None], str] = {
    ("anthropic", None): "api.anthropic.com",
    ("openai", None): "api.openai.com",
    ("gemini", None): "generativelanguage.googleapis.com",
}


def _server(target: Target) -> tuple[str, int] | None:
    """``(server.address, server.port)`` of where ``target``'s calls go."""
    if target.endpoint:
        parts = urlsplit(target.endpoint)
        if not parts.hostname:
            return None
        try:
            port = parts.port
        except ValueError:
            return None
        return parts.hostname, port or (443 if parts.scheme == "https" else 80)
    if target.platform == "bedrock" and target.region:
        return f"bedrock-runtime.{target.region}.amazonaws.com", 443
    if target.platform == "vertex" and target.region:
        host = "aiplatform.googleapis.com"
        return (host if target.region == "global" else f"{target.region}-{host}"), 443
    known = _DEFAULT_HOSTS.get((target.provider, target.platform))
    return None if known is None else (known, 443)


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

            names = _Names()
        except ImportError as err:
            from scriptorium._version import install_hint

            raise InvalidRequestError(
                "OTelObserver needs opentelemetry-api and opentelemetry-semantic-conventions: "
                + install_hint("otel"),
                field="observer",
            ) from err
        from scriptorium._version import __version__

        if capture_content is None:
            values = os.environ if env is None else env
            capture_content = values.get(CAPTURE_CONTENT_ENV, "").strip().lower() in (
                _CAPTURE_VALUES
            )
        self.capture_content = capture_content
        self._names = names
        self._trace = trace
        self._tracer = trace.get_tracer(_SCOPE_NAME, __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter(_SCOPE_NAME, __version__, meter_provider=meter_provider)
        from opentelemetry.semconv._incubating.metrics import gen_ai_metrics

        self._tokens = meter.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self._duration = meter.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION,
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
        names = self._owner._names
        self._span.set_attributes(
            {
                "scriptorium.request_hash": prepared.request_hash,
                "scriptorium.profile": prepared.profile,
                names.provider: names.provider_name(prepared.target),
                names.request_model: prepared.target.model,
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
                names = self._owner._names
                span.set_attributes(
                    {
                        "scriptorium.fallbacks": len(result.fallbacks),
                        "scriptorium.request_hash": prepared.request_hash,
                        "scriptorium.profile": prepared.profile,
                        names.provider: names.provider_name(prepared.target),
                        names.request_model: prepared.target.model,
                    }
                )
        if error is not None:
            kind = _error_type(error)
            span.set_attribute(self._owner._names.error_type, kind)
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
        names = owner._names
        target = request.target
        self._owner = owner
        self._started = time.perf_counter()
        self._common: dict[str, Any] = {
            names.operation: names.chat,
            names.provider: names.provider_name(target),
            names.request_model: target.model,
        }
        server = _server(target)
        if server is not None:
            self._common[names.server_address], self._common[names.server_port] = server
        settings = request.settings
        attributes: dict[str, Any] = {**self._common, "scriptorium.generation.kind": kind}
        for setting, name in names.request.items():
            value = getattr(settings, setting, None)
            if value is not None and value != ():
                attributes[name] = list(value) if isinstance(value, tuple | list) else value
        attributes[names.output_type] = (
            names.text if request.structured_output is None else names.json
        )
        if owner.capture_content:
            if request.system:
                attributes[names.system_instructions] = json.dumps(
                    [{"type": "text", "content": request.system}], ensure_ascii=False
                )
            attributes[names.input_messages] = _input_messages(request)
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
        names = self._owner._names
        metric_attributes = dict(self._common)
        if response is not None:
            usage = response.usage
            response_id = response.metadata.get("response_id") or response.metadata.get(
                "request_id"
            )
            attributes: dict[str, Any] = {
                names.response_model: response.model or self._common[names.request_model],
                names.finish_reasons: (response.finish_reason,),
                **{name: getattr(usage, field) for field, name in names.usage.items()},
                "scriptorium.cost_micro": usage.cost_micro,
                "scriptorium.llm_calls": response.attempts,
            }
            if isinstance(response_id, str) and response_id:
                attributes[names.response_id] = response_id
            if usage.reasoning_tokens:  # known only where the provider reports it
                attributes[names.reasoning_tokens] = usage.reasoning_tokens
            if self._owner.capture_content:
                parts = [{"type": "text", "content": response.text}]
                if response.reasoning is not None:
                    parts.insert(0, {"type": "reasoning", "content": response.reasoning})
                attributes[names.output_messages] = json.dumps(
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
            metric_attributes[names.response_model] = attributes[names.response_model]
            for token_type, count in (
                ("input", usage.input_tokens),
                ("output", usage.output_tokens),
            ):
                self._owner._tokens.record(
                    count, {**metric_attributes, names.token_type: token_type}
                )
        if error is not None:
            kind = _error_type(error)
            metric_attributes[names.error_type] = kind
            span.set_attribute(names.error_type, kind)
            reason = getattr(error, "reason", None)
            if isinstance(reason, str):
                span.set_attribute("scriptorium.error.reason", reason)
            _exception_event(span, error)
            span.set_status(self._owner._trace.Status(self._owner._trace.StatusCode.ERROR, kind))
        if self._timed:
            self._owner._duration.record(time.perf_counter() - self._started, metric_attributes)
        span.end()
