"""The body, the schema reduction, what ``prepare`` shows, and the registry entry: pure
functions, no SDK."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

from scriptorium.llm.gemini.api import option_problems, place_of, price_of
from scriptorium.llm.gemini.body import build_body, wire_view
from scriptorium.llm.gemini.schema import reduce_schema
from scriptorium.llm.model import LLMRequest, StructuredOutput, Target
from scriptorium.llm.registry import Route, default_registry
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message


def request(**fields: Any) -> LLMRequest:
    base: dict[str, Any] = {
        "target": Target(provider="gemini", model="gemini-2.5-flash"),
        "api_key": "AIza-body-0123456789abcdef",
        "messages": (Message(role="user", content="hi"),),
    }
    base.update(fields)
    return LLMRequest(**base)


def test_the_schema_keeps_what_the_api_takes_and_reports_the_rest() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "maxLength": 3, "format": "date"},
            "b": {"oneOf": [{"type": "integer", "multipleOf": 2}, {"const": True}]},
            "c": {"type": "array", "prefixItems": [{"type": "string"}], "items": False},
        },
        "$defs": {"x": {"not": {"type": "null"}}},
        "additionalProperties": False,
    }
    reduced, dropped = reduce_schema(schema)
    assert reduced["properties"]["a"] == {"type": "string", "format": "date"}
    assert reduced["properties"]["b"] == {"oneOf": [{"type": "integer"}, {"const": True}]}
    assert reduced["properties"]["c"]["items"] == {}
    assert reduced["$defs"] == {"x": {}}
    assert reduced["additionalProperties"] is False
    assert dropped == [
        "boolean subschema at #/properties/c/items",
        "maxLength",
        "multipleOf",
        "not",
    ]


def test_wire_view_shows_what_the_body_sends() -> None:
    structured = StructuredOutput(schema_={"type": "object", "properties": {}, "minProperties": 1})
    settings = ExecutionSettings(reasoning="low", max_tokens=4000)
    req = request(system="sys", structured_output=structured, settings=settings)
    built = build_body(req)
    view = wire_view(req)
    assert view.strategy == built.strategy == "native"
    assert view.system == "sys"
    assert view.dropped == built.dropped == ("minProperties",)
    assert view.reasoning is not None
    assert view.reasoning.sent == {
        "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": True}
    }
    assert built.body["generationConfig"]["thinkingConfig"] == view.reasoning.sent["thinkingConfig"]


def test_the_registry_serves_gemini_and_its_spec_imports_no_sdk() -> None:
    spec = default_registry().get("gemini")
    assert (spec.key_env, spec.base_url_env, spec.extra) == (
        "GEMINI_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "gemini",
    )
    assert "gemini-2.5-pro" in spec.prices
    code = (
        "import sys, scriptorium, scriptorium.llm.gemini.spec, scriptorium.llm.gemini;"
        "assert 'google.genai' not in sys.modules and 'google' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_route_needs_a_key_on_the_gemini_api_and_a_token_variable_on_vertex_ai() -> None:
    """The Gemini API needs a key (so a profile names its model, and the kernel offers
    ``CC_LLM_PROVIDER=gemini``) and honours its base-URL variable; Vertex AI needs no key, and
    the variable ``options.access_token_env`` names is read like one."""
    spec = default_registry().get("gemini")
    assert spec.needs_key
    assert spec.needs_model
    assert spec.needs_key_for({})
    assert spec.route_for({}) == Route(
        needs_key=True,
        base_url_env="GOOGLE_GEMINI_BASE_URL",
        key_envs=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    )
    vertex = {"vertexai": True, "project": "p", "location": "europe-west4"}
    assert not spec.needs_key_for(vertex)
    on_vertex = spec.route_for(vertex)
    assert dataclasses.replace(on_vertex, no_key_env=None) == Route(
        platform="vertex", region="europe-west4"
    )
    assert on_vertex.no_key_env is not None
    assert "name no api_key_env" in on_vertex.no_key_env
    assert spec.route_for({**vertex, "access_token_env": "TOK"}).token_env == "TOK"
    assert spec.route_for({"vertexai": True, "project": "p"}).region == "global"
    # Only a boolean true chooses Vertex AI (check reports anything else).
    assert spec.needs_key_for({"vertexai": "yes"})


def test_vertex_options_name_the_place_and_check_reports_bad_ones() -> None:
    place = place_of(None, {"vertexai": True, "project": "p"})
    assert (place.vertexai, place.project, place.location) == (True, "p", "global")
    assert place_of("http://x", {}).base_url == "http://x"
    problems = list(option_problems({"vertexai": True, "location": "eu", "colour": 1}))
    assert any("colour" in p for p in problems)
    assert any("options.project" in p for p in problems)
    assert list(option_problems({"vertexai": True, "project": "p", "location": "eu"})) == []


def test_the_long_context_tier_starts_above_its_threshold() -> None:
    base = price_of("gemini-2.5-pro", 200_000)
    long = price_of("gemini-2.5-pro", 200_001)
    assert base is not None
    assert long is not None
    assert (base[1].input, long[1].input) == (1_250_000, 2_500_000)
    assert price_of("gemini-2.5-flash-lite-001", 10**6) == price_of("gemini-2.5-flash-lite", 0)


def test_the_engine_the_testing_kit_and_the_fake_server_load_no_gemini_sdk() -> None:
    """Building an Engine, importing the testing kit and naming FakeGeminiServer import neither
    ``google.genai`` nor ``google.auth``: the SDK loads when a request is sent."""
    code = (
        "import sys\nfrom scriptorium import Engine\nimport scriptorium.testing as t\n"
        "Engine('.')\nt.FakeGeminiServer\n"
        "assert not [m for m in sys.modules if m.startswith(('google.genai', 'google.auth'))]"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
