"""The span attributes are the OpenTelemetry GenAI conventions' own names and values, read from
the ``opentelemetry-semantic-conventions`` package: the provider's name by route, where the call
went, the request parameters sent and the output type."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import server_attributes

from scriptorium.llm.model import LLMRequest, StructuredOutput, Target
from scriptorium.observe import OTelObserver
from scriptorium.profile.model import ExecutionSettings

Names = gen_ai.GenAiProviderNameValues


def _chat_attributes(request: LLMRequest) -> dict[str, Any]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    observer = OTelObserver(tracer_provider=provider, capture_content=False)
    run = observer.start_run("r1", "p")
    run.generation("initial", request).end(None, None)
    run.end(None, None)
    (chat,) = [s for s in spans.get_finished_spans() if s.name.startswith("chat")]
    return dict(chat.attributes or {})


@pytest.mark.parametrize(
    ("provider", "platform", "region", "name", "host"),
    [
        ("anthropic", None, None, Names.ANTHROPIC, "api.anthropic.com"),
        (
            "anthropic",
            "bedrock",
            "us-east-1",
            Names.AWS_BEDROCK,
            "bedrock-runtime.us-east-1.amazonaws.com",
        ),
        (
            "anthropic",
            "vertex",
            "us-east5",
            Names.GCP_VERTEX_AI,
            "us-east5-aiplatform.googleapis.com",
        ),
        ("openai", None, None, Names.OPENAI, "api.openai.com"),
        ("openai", "azure", None, Names.AZURE_AI_OPENAI, None),
        ("gemini", None, None, Names.GCP_GEMINI, "generativelanguage.googleapis.com"),
        ("gemini", "vertex", "global", Names.GCP_VERTEX_AI, "aiplatform.googleapis.com"),
    ],
)
def test_the_provider_is_named_as_the_conventions_name_its_route(
    provider: str, platform: str | None, region: str | None, name: Any, host: str | None
) -> None:
    target = Target(provider=provider, model="m", platform=platform, region=region)
    attrs = _chat_attributes(LLMRequest(target=target))
    assert attrs[gen_ai.GEN_AI_PROVIDER_NAME] == name.value
    if host is not None:
        assert attrs[server_attributes.SERVER_ADDRESS] == host
        assert attrs[server_attributes.SERVER_PORT] == 443


def test_an_endpoint_gives_the_server_address_and_port() -> None:
    target = Target(provider="openai", model="m", endpoint="http://localhost:11434/v1?x=1")
    attrs = _chat_attributes(LLMRequest(target=target))
    assert attrs[server_attributes.SERVER_ADDRESS] == "localhost"
    assert attrs[server_attributes.SERVER_PORT] == 11434


def test_the_request_parameters_and_output_type_are_recorded() -> None:
    settings = ExecutionSettings(
        max_tokens=300, temperature=0.3, top_p=0.9, top_k=40, stop_sequences=("END",)
    )
    request = LLMRequest(
        target=Target(provider="anthropic", model="m"),
        settings=settings,
        structured_output=StructuredOutput(schema_={"type": "object"}),
    )
    attrs = _chat_attributes(request)
    assert attrs[gen_ai.GEN_AI_REQUEST_MAX_TOKENS] == 300
    assert attrs[gen_ai.GEN_AI_REQUEST_TEMPERATURE] == 0.3
    assert attrs[gen_ai.GEN_AI_REQUEST_TOP_P] == 0.9
    assert attrs[gen_ai.GEN_AI_REQUEST_TOP_K] == 40
    assert tuple(attrs[gen_ai.GEN_AI_REQUEST_STOP_SEQUENCES]) == ("END",)
    assert attrs[gen_ai.GEN_AI_OUTPUT_TYPE] == gen_ai.GenAiOutputTypeValues.JSON.value


def test_a_text_prompt_is_text_output() -> None:
    attrs = _chat_attributes(LLMRequest(target=Target(provider="anthropic", model="m")))
    assert attrs[gen_ai.GEN_AI_OUTPUT_TYPE] == gen_ai.GenAiOutputTypeValues.TEXT.value
    assert gen_ai.GEN_AI_REQUEST_TEMPERATURE not in attrs  # not sent, not recorded
