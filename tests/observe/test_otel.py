"""OTelObserver end to end: the real OpenTelemetry SDK (in-memory span exporter and metric reader)
watching runs that go through the real ``anthropic`` SDK to FakeAnthropicServer on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from scriptorium import Engine, Overrides
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.retry import RetryHooks
from scriptorium.observe import OTelObserver
from scriptorium.testing import FakeAnthropicServer

CANARY = "sk-ant-otel-canary-7c41d2e9b05a"
MODEL = "claude-sonnet-4-6"
USAGE = {"input_tokens": 21, "output_tokens": 5, "cache_read_input_tokens": 3}

GREET = """---
profile: fake-anthropic
inputs:
  type: object
  properties: {name: {type: string}}
---
## system
You greet people.

## user
Hello {{ name }}!
"""

CONTACT = """---
profile: fake-anthropic
output:
  format: json
  repair_attempts: 1
---
## user
Give me a JSON object with a name.
"""


def _no_sleep(_: float) -> None:
    return None


async def _no_asleep(_: float) -> None:
    return None


@dataclass
class Telemetry:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def histogram(self, name: str) -> list[HistogramDataPoint]:
        data = self.metrics.get_metrics_data()
        points: list[HistogramDataPoint] = []
        if data is None:
            return points
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        points.extend(
                            p for p in metric.data.data_points if isinstance(p, HistogramDataPoint)
                        )
        return points

    def everything(self) -> str:
        """Every span, event and metric as text, for canary searches."""
        spans = "\n".join(s.to_json() for s in self.finished())
        data = self.metrics.get_metrics_data()
        return spans + ("" if data is None else data.to_json())


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield Telemetry(exporter, reader, tracer_provider, meter_provider)
    tracer_provider.shutdown()
    meter_provider.shutdown()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(default_text=None) as fake:
        yield fake


@pytest.fixture
def project(tmp_path: Path, server: FakeAnthropicServer) -> Path:
    server.reset()
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "greet.prompt.md").write_text(GREET, encoding="utf-8")
    (tmp_path / "prompts" / "contact.prompt.md").write_text(CONTACT, encoding="utf-8")
    (tmp_path / "profiles" / "fake-anthropic.yaml").write_text(
        f"provider: anthropic\nmodel: {MODEL}\nendpoint: {server.url}\n"
        "api_key_env: ANTHROPIC_API_KEY\nsettings: {max_tokens: 256, max_retries: 2}\n",
        encoding="utf-8",
    )
    return tmp_path


def _engine(
    project: Path,
    telemetry: Telemetry,
    *,
    repair: bool = False,
    capture: bool | None = None,
    env: dict[str, str] | None = None,
) -> Engine:
    observer = OTelObserver(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        capture_content=capture,
        env={},
    )
    return Engine(
        project,
        env={"ANTHROPIC_API_KEY": CANARY} if env is None else env,
        repair=repair,
        observer=observer,
        retry_hooks=RetryHooks(sleep=_no_sleep, asleep=_no_asleep),
    )


def _tree(spans: list[ReadableSpan]) -> tuple[ReadableSpan, list[ReadableSpan]]:
    runs = [s for s in spans if s.name.startswith("run ")]
    assert len(runs) == 1, [s.name for s in spans]
    run = runs[0]
    chats = [s for s in spans if s is not run]
    for chat in chats:
        assert chat.parent is not None
        assert chat.parent.span_id == run.context.span_id
        assert chat.context.trace_id == run.context.trace_id
    return run, chats


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_a_plain_run_is_one_run_span_over_one_chat_span(
    project: Path, telemetry: Telemetry, server: FakeAnthropicServer
) -> None:
    server.reply("Hi Ada!", usage=USAGE)
    result = _engine(project, telemetry).run("greet", inputs={"name": "Ada"})

    run, chats = _tree(telemetry.finished())
    assert run.name == "run greet"
    assert run.kind is SpanKind.INTERNAL
    for key, value in {
        "scriptorium.prompt_id": "greet",
        "scriptorium.request_hash": result.prepared.request_hash,
        "scriptorium.validation.valid": True,
        "scriptorium.attempts": 1,
        "scriptorium.cost_micro": result.usage.cost_micro,
    }.items():
        assert _attrs(run)[key] == value, key
    assert result.usage.cost_micro > 0
    assert run.status.status_code is StatusCode.UNSET

    (chat,) = chats
    assert chat.name == f"chat {MODEL}"
    assert chat.kind is SpanKind.CLIENT
    attrs = _attrs(chat)
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "anthropic"
    assert attrs["gen_ai.request.model"] == MODEL
    assert attrs["gen_ai.request.max_tokens"] == 256
    assert attrs["gen_ai.response.model"] == MODEL
    assert str(attrs["gen_ai.response.id"]).startswith("msg_fake_")
    assert tuple(attrs["gen_ai.response.finish_reasons"]) == ("stop",)
    assert attrs["gen_ai.usage.input_tokens"] == 21
    assert attrs["gen_ai.usage.output_tokens"] == 5
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == 3
    assert attrs["gen_ai.usage.cache_creation.input_tokens"] == 0
    assert "error.type" not in attrs
    # Where the call went, and what was asked for, under the conventions' names.
    assert f"http://{attrs['server.address']}:{attrs['server.port']}" == server.base_url
    assert attrs["gen_ai.output.type"] == "text"
    # Content is off by default.
    content = ("gen_ai.input", "gen_ai.output.messages", "gen_ai.system")
    assert not any(k.startswith(content) for k in attrs)
    assert "Hello Ada" not in telemetry.everything()


def test_metrics_count_tokens_by_type_and_time_each_call(
    project: Path, telemetry: Telemetry, server: FakeAnthropicServer
) -> None:
    server.reply("Hi!", usage=USAGE)
    server.reply("Hi again!", usage=USAGE)
    engine = _engine(project, telemetry)
    engine.run("greet", inputs={"name": "Ada"})
    engine.run("greet", inputs={"name": "Grace"})

    tokens = telemetry.histogram("gen_ai.client.token.usage")
    by_type = {p.attributes["gen_ai.token.type"]: p for p in tokens if p.attributes}
    assert by_type["input"].sum == 42
    assert by_type["input"].count == 2
    assert by_type["output"].sum == 10
    assert by_type["output"].count == 2
    for point in tokens:
        assert point.attributes is not None
        assert point.attributes["gen_ai.operation.name"] == "chat"
        assert point.attributes["gen_ai.provider.name"] == "anthropic"
        assert point.attributes["gen_ai.request.model"] == MODEL
    (duration,) = telemetry.histogram("gen_ai.client.operation.duration")
    assert duration.count == 2
    assert duration.sum > 0


def test_a_transport_retry_is_an_event_on_the_chat_span(
    project: Path, telemetry: Telemetry, server: FakeAnthropicServer
) -> None:
    server.fail(529, headers={"retry-after": "0"})
    server.reply("Hi!", usage=USAGE)
    result = _engine(project, telemetry).run("greet", inputs={"name": "Ada"})
    assert result.usage.llm_calls == 2

    _run, (chat,) = _tree(telemetry.finished())
    retries = [e for e in chat.events if e.name == "retry"]
    assert len(retries) == 1
    event = dict(retries[0].attributes or {})
    assert event["scriptorium.retry.reason"] == "overloaded"
    assert event["http.response.status_code"] == 529
    assert event["scriptorium.retry.attempt"] == 1
    assert chat.status.status_code is StatusCode.UNSET
    assert "error.type" not in _attrs(chat)


def test_a_failed_run_marks_both_spans_with_the_error_code_and_never_its_message(
    project: Path, telemetry: Telemetry, server: FakeAnthropicServer
) -> None:
    server.fail(401, message=f"invalid x-api-key: {CANARY}")
    with pytest.raises(LLMGenerateError) as caught:
        _engine(project, telemetry).run("greet", inputs={"name": "Ada"})
    assert caught.value.reason == "auth"

    run, (chat,) = _tree(telemetry.finished())
    for span in (run, chat):
        assert span.status.status_code is StatusCode.ERROR
        assert _attrs(span)["error.type"] == "llm_generate"
        (exception,) = [e for e in span.events if e.name == "exception"]
        attributes = dict(exception.attributes or {})
        assert attributes == {
            "exception.type": "scriptorium.errors.LLMGenerateError",
            "error.type": "llm_generate",
        }
    assert _attrs(chat)["scriptorium.error.reason"] == "auth"
    everything = telemetry.everything()
    assert CANARY not in everything
    assert "invalid x-api-key" not in everything
    (duration,) = telemetry.histogram("gen_ai.client.operation.duration")
    assert duration.attributes is not None
    assert duration.attributes["error.type"] == "llm_generate"


def test_a_run_failing_before_the_call_has_a_run_span_and_no_chat_span(
    project: Path, telemetry: Telemetry
) -> None:
    # The key variable is unset: APIKeyEnvMissingError in prepare.
    engine = _engine(project, telemetry, env={})
    with pytest.raises(Exception, match="ANTHROPIC_API_KEY"):
        engine.run("greet", inputs={"name": "Ada"})
    (run,) = telemetry.finished()
    assert run.name == "run greet"
    assert _attrs(run)["error.type"] == "api_key_env_missing"
    assert "scriptorium.request_hash" not in _attrs(run)


def test_a_repaired_run_has_a_chat_span_per_generation(
    project: Path, telemetry: Telemetry, server: FakeAnthropicServer
) -> None:
    server.reply("not json at all", usage=USAGE)
    server.reply('{"name": "Ada"}', usage=USAGE)
    result = _engine(project, telemetry, repair=True).run("contact")
    assert result.validation.valid
    assert result.validation.repaired

    run, chats = _tree(telemetry.finished())
    assert [_attrs(c)["scriptorium.generation.kind"] for c in chats] == ["initial", "repair"]
    assert _attrs(run)["scriptorium.attempts"] == 2
    assert _attrs(run)["scriptorium.validation.valid"] is True
    assert sum(_attrs(c)["gen_ai.usage.input_tokens"] for c in chats) == 42


def test_content_is_recorded_only_when_asked(
    project: Path, telemetry: Telemetry, server: FakeAnthropicServer
) -> None:
    server.reply("Hi Ada!", usage=USAGE)
    observer = OTelObserver(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        env={"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
    )
    assert observer.capture_content
    engine = Engine(project, env={"ANTHROPIC_API_KEY": CANARY}, observer=observer)
    engine.run("greet", inputs={"name": "Ada"})

    _, (chat,) = _tree(telemetry.finished())
    attrs = _attrs(chat)
    assert json.loads(str(attrs["gen_ai.system_instructions"])) == [
        {"type": "text", "content": "You greet people."}
    ]
    assert json.loads(str(attrs["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "Hello Ada!"}]}
    ]
    output = json.loads(str(attrs["gen_ai.output.messages"]))
    assert output[0]["parts"] == [{"type": "text", "content": "Hi Ada!"}]
    assert CANARY not in telemetry.everything()


def test_the_async_twin_makes_the_same_tree(
    project: Path, telemetry: Telemetry, server: FakeAnthropicServer
) -> None:
    server.fail(429, headers={"retry-after": "0"})
    server.reply("Hi!", usage=USAGE)
    engine = _engine(project, telemetry)
    result = asyncio.run(engine.arun("greet", inputs={"name": "Ada"}))
    run, (chat,) = _tree(telemetry.finished())
    assert _attrs(run)["scriptorium.request_hash"] == result.prepared.request_hash
    assert [e.name for e in chat.events] == ["retry"]
    assert _attrs(chat)["gen_ai.usage.output_tokens"] == 5


def test_retries_are_logged_at_info_with_the_run_scope(
    project: Path,
    telemetry: Telemetry,
    server: FakeAnthropicServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server.fail(503)
    server.reply("Hi!", usage=USAGE)
    engine = Engine(
        project,
        env={"ANTHROPIC_API_KEY": CANARY},
        retry_hooks=RetryHooks(sleep=_no_sleep, asleep=_no_asleep),
    )
    with caplog.at_level(logging.DEBUG, logger="scriptorium"):
        result = engine.run("greet", inputs={"name": "Ada"})
    retries = [r for r in caplog.records if r.levelno == logging.INFO and "retrying" in r.msg]
    assert len(retries) == 1
    record = retries[0]
    assert record.__dict__["reason"] == "server_error"
    assert record.__dict__["delay_s"] > 0
    for found in [record, *(r for r in caplog.records if r.name.startswith("scriptorium"))]:
        assert found.__dict__["run_id"] == result.run_id
        assert found.__dict__["prompt_id"] == "greet"
        assert found.__dict__["request_hash"] == result.prepared.request_hash
    assert all(CANARY not in r.getMessage() for r in caplog.records)


def test_a_streamed_run_makes_the_same_tree_with_its_retries(
    project: Path, telemetry: Telemetry, server: FakeAnthropicServer
) -> None:
    """engine.stream through the real SDK: one run span over one chat span with the response's
    usage, and the retry before the first text as an event on the chat span."""
    server.fail(529)
    server.reply("Hi Ada!", usage=USAGE, chunks=3)
    with _engine(project, telemetry).stream("greet", inputs={"name": "Ada"}) as stream:
        result = stream.result()
    run, (chat,) = _tree(telemetry.finished())
    assert _attrs(run)["scriptorium.request_hash"] == result.prepared.request_hash
    assert _attrs(run)["scriptorium.validation.valid"] is True
    assert [e.name for e in chat.events] == ["retry"]
    assert _attrs(chat)["gen_ai.usage.output_tokens"] == 5
    assert CANARY not in telemetry.everything()


def test_reasoning_tokens_are_an_attribute_where_the_provider_reports_them(
    project: Path, telemetry: Telemetry, server: FakeAnthropicServer
) -> None:
    server.reply("Hi Ada!", usage=USAGE, thinking="Greet.", thinking_tokens=4)
    server.reply("Hi Ada!", usage=USAGE)
    engine = _engine(project, telemetry, capture=True)
    overrides = Overrides(reasoning="low")
    engine.run("greet", inputs={"name": "Ada"}, overrides=overrides)
    engine.run("greet", inputs={"name": "Ada"})
    chats = [s for s in telemetry.finished() if s.name.startswith("chat ")]
    thought, plain = (_attrs(c) for c in chats)
    assert thought["gen_ai.usage.reasoning.output_tokens"] == 4
    assert thought["gen_ai.usage.output_tokens"] == 5
    assert "gen_ai.usage.reasoning.output_tokens" not in plain
    # Captured content shows the reasoning as its own part, before the text.
    parts = json.loads(str(thought["gen_ai.output.messages"]))[0]["parts"]
    assert parts == [
        {"type": "reasoning", "content": "Greet."},
        {"type": "text", "content": "Hi Ada!"},
    ]


def test_a_streamed_run_reports_its_reasoning_tokens_too(
    project: Path, telemetry: Telemetry, server: FakeAnthropicServer
) -> None:
    server.reply("Hi Ada!", usage=USAGE, thinking="Greet.", thinking_tokens=4, chunks=2)
    engine = _engine(project, telemetry)
    engine.stream("greet", inputs={"name": "Ada"}, overrides=Overrides(reasoning="low")).result()
    _, (chat,) = _tree(telemetry.finished())
    assert _attrs(chat)["gen_ai.usage.reasoning.output_tokens"] == 4
    assert "Greet." not in telemetry.everything()
