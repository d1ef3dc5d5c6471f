"""Each provider spec's wire view (what ``prepare`` shows) agrees with what each adapter actually builds, for every
strategy, format and setting combination."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.errors import InvalidRequestError
from scriptorium.llm.anthropic.body import build_body
from scriptorium.llm.model import LLMRequest, StructuredOutput, Target
from scriptorium.llm.openai.body import build_params
from scriptorium.llm.registry import Registry, WireView
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message

REGISTRY = Registry()


def wire_view(request: LLMRequest) -> WireView:
    """What ``prepare`` shows for ``request``: its provider spec's view, or the request as it is
    for a provider the registry does not know."""
    spec = REGISTRY.find(request.target.provider)
    return WireView(request.system, None, ()) if spec is None else spec.wire_view(request)


SCHEMAS: list[dict[str, Any] | None] = [
    None,
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
    {"type": "array", "items": {"type": "integer"}},
]
specs = st.none() | st.builds(
    lambda schema, strategy: StructuredOutput(
        schema_=schema, strategy=strategy, format="json" if schema is None else "json_schema"
    ),
    st.sampled_from(SCHEMAS),
    st.sampled_from(["auto", "native", "tool", "prompt"]),
)
sampling = st.builds(
    ExecutionSettings,
    temperature=st.none() | st.just(0.5),
    top_p=st.none() | st.just(0.9),
    top_k=st.none() | st.just(5),
)


def request(provider: str, model: str, system: str | None, spec: Any, s: Any) -> LLMRequest:
    return LLMRequest(
        target=Target(provider=provider, model=model),
        system=system,
        messages=(Message(role="user", content="Say it in json please."),),
        settings=s,
        structured_output=spec,
    )


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(["claude-sonnet-4-6", "claude-3-haiku-20240307"]),
    system=st.none() | st.just("Be brief."),
    spec=specs,
    chosen=sampling,
)
def test_anthropic_view_is_the_body(
    model: str, system: str | None, spec: StructuredOutput | None, chosen: ExecutionSettings
) -> None:
    built = build_body(request("anthropic", model, system, spec, chosen))
    view = wire_view(request("anthropic", model, system, spec, chosen))
    assert view.system == built.body.get("system")
    assert view.ignored_settings == built.ignored
    assert view.strategy == (None if built.output is None else built.output.strategy)


@settings(max_examples=60, deadline=None)
@given(system=st.none() | st.just("Be brief."), spec=specs, chosen=sampling)
def test_openai_view_is_the_params(
    system: str | None, spec: StructuredOutput | None, chosen: ExecutionSettings
) -> None:
    req = request("openai", "gpt-4o", system, spec, chosen)
    params, strategy = build_params(req)
    sent_system = next((m["content"] for m in params["messages"] if m["role"] == "system"), None)
    view = wire_view(req)
    assert view.system == sent_system
    assert view.strategy == strategy
    assert set(view.ignored_settings) == {"top_k"} & {n for n in ("top_k",) if chosen.top_k}
    assert "top_k" not in params


@pytest.mark.parametrize("provider", ["fake", "replay", "custom"])
def test_other_providers_send_the_request_as_it_is(provider: str) -> None:
    spec = StructuredOutput(schema_=SCHEMAS[1], strategy="prompt")
    view = wire_view(request(provider, "m", "Sys.", spec, ExecutionSettings(temperature=1.0)))
    assert (view.system, view.ignored_settings) == ("Sys.", ())
    provider_spec = REGISTRY.find(provider)
    assert provider_spec is None or provider_spec.ignored_settings == ()


reasoning_settings = st.builds(
    ExecutionSettings,
    max_tokens=st.sampled_from([2000, 40_000]),
    temperature=st.none() | st.just(0.5),
    reasoning=st.none() | st.sampled_from(["off", "low", "medium", "high", "xhigh", "max"]),
    reasoning_budget_tokens=st.none() | st.sampled_from([1024, 3000]),
)
REASONING_MEMBERS = ("thinking", "output_config", "reasoning_effort")


def _reasoning_sent(body: dict[str, Any], schema_member: Any) -> dict[str, Any]:
    """The body's reasoning members (``output_config`` without a structured output's format)."""
    sent = {k: body[k] for k in REASONING_MEMBERS if k in body}
    config = dict(sent.get("output_config") or {})
    if schema_member is not None:
        config.pop("format", None)
    if "output_config" in sent:
        sent["output_config"] = config
    return {k: v for k, v in sent.items() if v != {}}


@settings(max_examples=120, deadline=None)
@given(
    model=st.sampled_from(
        ["claude-opus-4-7", "claude-sonnet-4-6", "claude-sonnet-4-5", "claude-3-5-haiku"]
    ),
    spec=specs,
    chosen=reasoning_settings,
)
def test_anthropic_reasoning_view_is_the_body(
    model: str, spec: StructuredOutput | None, chosen: ExecutionSettings
) -> None:
    """The reasoning prepare shows is what the body carries, and a conflict refuses both."""
    req = request("anthropic", model, "Be brief.", spec, chosen)
    try:
        view = wire_view(req)
    except InvalidRequestError:
        with pytest.raises(InvalidRequestError):
            build_body(req)
        return
    built = build_body(req)
    assert view.ignored_settings == built.ignored
    assert view.strategy == (None if built.output is None else built.output.strategy)
    assert view.system == built.body.get("system")
    sent = {} if view.reasoning is None else view.reasoning.sent
    native = built.output is not None and built.output.strategy == "native"
    assert _reasoning_sent(built.body, "format" if native else None) == sent
    if view.reasoning is not None and view.reasoning.thinking:
        assert view.strategy != "tool"


@settings(max_examples=80, deadline=None)
@given(
    model=st.sampled_from(["gpt-5", "gpt-5.2", "o3", "gpt-4o", "local-model"]),
    spec=specs,
    chosen=reasoning_settings,
)
def test_openai_reasoning_view_is_the_params(
    model: str, spec: StructuredOutput | None, chosen: ExecutionSettings
) -> None:
    req = request("openai", model, None, spec, chosen)
    try:
        view = wire_view(req)
    except InvalidRequestError:  # a reasoning model given a temperature or top_p it refuses
        with pytest.raises(InvalidRequestError):
            build_params(req)
        return
    params, _strategy = build_params(req)
    sent = {} if view.reasoning is None else view.reasoning.sent
    assert {k: params[k] for k in REASONING_MEMBERS if k in params} == sent
    assert ("reasoning_budget_tokens" in view.ignored_settings) is (
        chosen.reasoning_budget_tokens is not None
    )
