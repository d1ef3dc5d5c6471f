"""Conformance with real provider traffic: answers other public projects recorded from the
providers' APIs, replayed byte for byte by the loopback fakes through the real SDKs, run through
``Engine.run`` (``Engine.stream`` for a recorded stream), and held against what each recording
means by the provider's documented format (``expect``: text, value, finish reason, every usage
class, cost at list price, reasoning, error sentinel and reason).

The cases live in ``data/*.json``, one file per source, each case with its provenance
(repository, path, commit, licence); ``harvest.py`` is how they were read, and
``internal_docs/recorded.md`` how to add one. One set of fake servers and one project serve
every case of the module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scriptorium import Engine
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.retry import RetryHooks
from scriptorium.testing import (
    FakeAnthropicServer,
    FakeAzureOpenAIServer,
    FakeBedrockServer,
    FakeGeminiServer,
    FakeOpenAIServer,
    FakeVertexServer,
)
from scriptorium.usecase.model import RunResult

DATA = Path(__file__).parent / "data"
KEY_ENV = "RECORDED_KEY"
KEY = "recorded-key-canary-4c1d9e"
AWS = {
    "AWS_ACCESS_KEY_ID": "AKIAFAKE0RECORDED0ID",
    "AWS_SECRET_ACCESS_KEY": "aws-recorded-secret-canary",
    "AWS_EC2_METADATA_DISABLED": "true",
}
#: The licences a recording may come under (permissive ones only).
LICENCES = {"MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause"}


def _load() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for path in sorted(DATA.glob("*.json")):
        cases.extend(json.loads(path.read_text(encoding="utf-8")))
    return cases


CASES = _load()
PROMPTS = {"text": "say", "native": "native-json", "prompt": "prompt-json"}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60]


def _profile_name(case: dict[str, Any]) -> str:
    return f"{case['route']}--{_slug(case['model'])}"


def _prompt_id(case: dict[str, Any]) -> str:
    return str(case["tool"]) if case["strategy"] == "tool" else PROMPTS[case["strategy"]]


def _json_prompt(strategy: str, keys: set[str] | None = None) -> str:
    """A JSON prompt taking any object. A tool's schema names the keys its recorded calls gave
    (each of any type, none required), so OpenAI's strict function parameters can be made."""
    schema: dict[str, Any] = {"type": "object"}
    if keys is not None:
        # An object without properties has no strict form: one optional key stands in.
        schema["properties"] = {key: {} for key in sorted(keys or {"unused"})}
    return (
        f"---\noutput:\n  format: json_schema\n  schema: {json.dumps(schema)}\n"
        f"  strategy: {strategy}\n  repair_attempts: 0\n---\nAnswer as JSON.\n"
    )


def _tool_keys() -> dict[str, set[str]]:
    """Each tool name's keys over every recorded call of it."""
    keys: dict[str, set[str]] = {}
    for case in CASES:
        if case["strategy"] == "tool":
            value = case["expect"].get("value")
            keys.setdefault(case["tool"], set()).update(value or {})
    return keys


class Servers:
    """One fake server per route, shared by every case of the module."""

    def __init__(self) -> None:
        self.anthropic = FakeAnthropicServer(default_text=None).start()
        self.openai = FakeOpenAIServer(default_text=None).start()
        self.gemini = FakeGeminiServer(default_text=None).start()
        self.bedrock = FakeBedrockServer(default_text=None).start()
        self.vertex = FakeVertexServer(default_text=None).start()
        self.azure = FakeAzureOpenAIServer(default_text=None).start()

    def of(self, route: str) -> Any:
        return {
            "anthropic": self.anthropic,
            "openai": self.openai,
            "gemini": self.gemini,
            "gemini_vertex": self.gemini,
            "bedrock": self.bedrock,
            "vertex": self.vertex,
            "azure": self.azure,
        }[route]

    def stop(self) -> None:
        for server in (
            self.anthropic,
            self.openai,
            self.gemini,
            self.bedrock,
            self.vertex,
            self.azure,
        ):
            server.stop()


def _profile(case: dict[str, Any], servers: Servers) -> str:
    route, model = case["route"], json.dumps(case["model"])
    common = f"model: {model}\nsettings: {{max_retries: 0}}\n"
    if route == "anthropic":
        where = f"provider: anthropic\nendpoint: {servers.anthropic.url}\napi_key_env: {KEY_ENV}\n"
    elif route == "bedrock":
        where = (
            f"provider: anthropic\nendpoint: {servers.bedrock.url}\n"
            "options: {platform: bedrock, region: us-east-1}\n"
        )
    elif route == "vertex":
        where = (
            f"provider: anthropic\nendpoint: {servers.vertex.url}\noptions: {{platform: vertex, "
            f"project: recorded, region: us-east5, access_token_env: {KEY_ENV}}}\n"
        )
    elif route == "openai":
        where = f"provider: openai\nendpoint: {servers.openai.url}\napi_key_env: {KEY_ENV}\n"
    elif route == "azure":
        where = (
            f"provider: openai\nendpoint: {servers.azure.url}\napi_key_env: {KEY_ENV}\n"
            "options: {platform: azure, api_version: '2024-10-21'}\n"
        )
    elif route == "gemini":
        where = f"provider: gemini\nendpoint: {servers.gemini.url}\napi_key_env: {KEY_ENV}\n"
    else:
        where = (
            f"provider: gemini\nendpoint: {servers.gemini.url}\noptions: {{vertexai: true, "
            f"project: recorded, location: us-central1, access_token_env: {KEY_ENV}}}\n"
        )
    return where + common


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engine, Servers]]:
    servers = Servers()
    root = tmp_path_factory.mktemp("recorded")
    (root / "prompts").mkdir()
    (root / "profiles").mkdir()
    (root / "prompts" / "say.prompt.md").write_text("Say hello.\n", encoding="utf-8")
    for strategy, prompt in PROMPTS.items():
        if strategy != "text":
            (root / "prompts" / f"{prompt}.prompt.md").write_text(
                _json_prompt(strategy), encoding="utf-8"
            )
    for tool, keys in _tool_keys().items():
        path = root / "prompts" / f"{tool}.prompt.md"
        path.write_text(_json_prompt("tool", keys), encoding="utf-8")
    for case in CASES:
        profile = root / "profiles" / f"{_profile_name(case)}.yaml"
        profile.write_text(_profile(case, servers), encoding="utf-8")
    hooks = RetryHooks(sleep=lambda _s: None, jitter=lambda _lo, _hi: 1.0)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in AWS.items():
            patch.setenv(name, value)
        for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "ANTHROPIC_BEDROCK_BASE_URL"):
            patch.delenv(name, raising=False)
        patch.setenv("AWS_CONFIG_FILE", str(root / "no-aws-config"))
        patch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(root / "no-aws-credentials"))
        engine = Engine(root, env={KEY_ENV: KEY}, retry_hooks=hooks)
        try:
            yield engine, servers
        finally:
            servers.stop()


def _run(engine: Engine, case: dict[str, Any]) -> RunResult:
    prompt, profile = _prompt_id(case), _profile_name(case)
    if not case["stream"]:
        return engine.run(prompt, profile=profile)
    with engine.stream(prompt, profile=profile) as stream:
        deltas = [event.text for event in stream if event.type == "text_delta"]
        result = stream.result()
    if case["strategy"] == "text":
        # What was streamed adds up to the text of the result.
        assert "".join(deltas) == result.output.text
    return result


@pytest.mark.parametrize("case", CASES, ids=[str(c["id"]) + f"[{c['route']}]" for c in CASES])
def test_a_recorded_answer_reads_as_its_provider_documents_it(
    setup: tuple[Engine, Servers], case: dict[str, Any]
) -> None:
    engine, servers = setup
    server = servers.of(case["route"])
    server.clear()
    recorded = case["response"]
    server.replay(recorded["body"], status=recorded["status"], headers=recorded["headers"])
    expect = case["expect"]
    if "error" in expect:
        with pytest.raises(LLMGenerateError) as caught:
            _run(engine, case)
        assert caught.value.reason == expect["error"]["reason"]
        assert caught.value.http_status == expect["error"]["http_status"]
        assert KEY not in str(caught.value)
        return
    result = _run(engine, case)
    assert result.finish_reason == expect["finish_reason"]
    if expect["text"] is not None:
        assert result.output.text == expect["text"]
    if expect["value"] is not None:
        assert result.validation.value == expect["value"]
    assert result.validation.valid is expect["valid"]
    for name, count in expect["usage"].items():
        assert getattr(result.usage, name) == count, name
    if expect["cost_micro"] is not None:
        assert result.usage.cost_micro == expect["cost_micro"]
    assert result.output.reasoning == expect["reasoning"]
    if expect["model"]:
        assert result.model == expect["model"]
    if not expect["valid"] and expect["finish_reason"] != "stop":
        assert result.validation.issues[0].keyword in ("truncated", "refusal", "finish_reason")


def test_every_case_names_where_it_comes_from_under_a_permissive_licence() -> None:
    assert len(CASES) >= 150
    routes = {case["route"] for case in CASES}
    assert routes >= {
        "anthropic",
        "openai",
        "gemini",
        "gemini_vertex",
        "bedrock",
        "vertex",
        "azure",
    }
    for case in CASES:
        source = case["provenance"]
        assert source["licence"] in LICENCES
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])
        assert source["repository"]
        assert source["path"]
