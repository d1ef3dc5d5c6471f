"""What ``prepare`` shows is what goes over the wire, and ``RunResult.metadata`` says what the
adapter reported: through ``Engine`` and the real ``anthropic``/``openai`` SDKs against the loopback
fake servers."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from scriptorium import Engine, errors
from scriptorium.llm.anthropic.client import AnthropicClient
from scriptorium.llm.openai.client import OpenAIClient
from scriptorium.testing import FakeAnthropicServer, FakeClient, FakeOpenAIServer

KEY = "sk-ant-test-0123456789abcdef"
SCHEMA = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string"}},
    "additionalProperties": False,
}


class Person(BaseModel):
    name: str


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


@pytest.fixture
def server(shared_server: FakeAnthropicServer) -> FakeAnthropicServer:
    shared_server.reset()
    return shared_server


def _project(root: Path, endpoint: str, *, strategy: str = "prompt", pricing: str = "") -> Path:
    (root / "prompts").mkdir(exist_ok=True)
    (root / "profiles").mkdir(exist_ok=True)
    (root / "prompts" / "who.prompt.md").write_text(
        "---\nprofile: claude\noutput:\n  format: json_schema\n"
        f"  schema: {json.dumps(SCHEMA)}\n  strategy: {strategy}\n---\n"
        "## system\nYou extract names.\n\n## user\nAda wrote this.\n",
        encoding="utf-8",
    )
    (root / "prompts" / "plain.prompt.md").write_text(
        "---\nprofile: claude\n---\nSay hi.\n", encoding="utf-8"
    )
    (root / "profiles" / "claude.yaml").write_text(
        "provider: anthropic\nmodel: claude-sonnet-4-6\n"
        f"endpoint: {endpoint}\napi_key_env: TEST_ANTHROPIC_KEY\n"
        "settings: {max_tokens: 64, temperature: 0.2, max_retries: 0}\n" + pricing,
        encoding="utf-8",
    )
    return root


@pytest.fixture(scope="module")
def anthropic_client() -> Iterator[AnthropicClient]:
    """One adapter (and so one SDK client per endpoint) for the module, closed at its end."""
    client = AnthropicClient()
    yield client
    client.close()


@pytest.fixture
def make_engine(anthropic_client: AnthropicClient) -> Callable[[Path], Engine]:
    def build(root: Path) -> Engine:
        return Engine(root, client=anthropic_client, env={"TEST_ANTHROPIC_KEY": KEY})

    return build


def test_prepare_shows_the_system_text_the_prompt_strategy_sends(
    server: FakeAnthropicServer, tmp_path: Path, make_engine: Callable[[Path], Engine]
) -> None:
    """With strategy ``prompt``, the schema instructions the adapter appends are in
    ``prepared.system``, byte for byte what the server receives."""
    engine = make_engine(_project(tmp_path, server.url))
    prepared = engine.prepare("who")
    assert prepared.system is not None
    assert prepared.system.startswith("You extract names.\n\n")
    assert '"required": ["name"]' in prepared.system
    server.reply('{"name": "Ada"}')
    result = engine.run("who")
    sent = server.requests[-1].body
    assert sent["system"] == prepared.system
    assert result.prepared.system == prepared.system
    assert result.metadata["strategy"] == "prompt"


def test_settings_the_provider_refuses_are_marked_ignored_and_not_sent(
    server: FakeAnthropicServer, tmp_path: Path, make_engine: Callable[[Path], Engine]
) -> None:
    """temperature stays in ``settings`` with its source, is listed in ``ignored_settings`` and in
    ``metadata["ignored_settings"]``, and never reaches the server."""
    engine = make_engine(_project(tmp_path, server.url))
    prepared = engine.prepare("plain", overrides={"top_k": 5})
    assert prepared.settings.temperature == 0.2
    assert prepared.settings_sources["temperature"] == "profile"
    assert prepared.ignored_settings == ("temperature", "top_k")
    server.reply("hi")
    result = engine.run("plain")
    assert "temperature" not in server.requests[-1].body
    assert result.metadata["ignored_settings"] == ["temperature"]


def test_metadata_carries_request_id_service_tier_and_pricing_note(
    server: FakeAnthropicServer, tmp_path: Path, make_engine: Callable[[Path], Engine]
) -> None:
    """The provider's request id and service tier, and why a cost is 0, reach the result."""
    root = _project(tmp_path, server.url)
    engine = make_engine(root)
    server.reply("hi", usage={"input_tokens": 10, "output_tokens": 2, "service_tier": "standard"})
    result = engine.run("plain", overrides={"model": "claude-unknown-9"})
    assert str(result.metadata["request_id"]).startswith("req_fake_")
    assert result.metadata["service_tier"] == "standard"
    assert result.usage.cost_micro == 0
    assert "unknown model" in result.metadata["pricing"]
    assert KEY not in result.model_dump_json()


def test_a_partial_profile_pricing_derives_the_cache_prices(
    server: FakeAnthropicServer, tmp_path: Path, make_engine: Callable[[Path], Engine]
) -> None:
    """``pricing: {input, output}`` works: cache writes cost 1.25x input, cache reads 0.1x."""
    root = _project(tmp_path, server.url, pricing="pricing: {input: 2.0, output: 10.0}\n")
    engine = make_engine(root)
    usage = {
        "input_tokens": 1_000_000,
        "output_tokens": 100_000,
        "cache_creation_input_tokens": 1_000_000,
        "cache_read_input_tokens": 1_000_000,
    }
    server.reply("hi", usage=usage)
    result = engine.run("plain")
    # 2.00 input + 1.00 output + 2.50 cache write + 0.20 cache read
    assert result.usage.cost_micro == 5_700_000
    assert result.metadata["pricing"] is None


def test_parsed_returns_a_typed_value_or_raises_output_invalid(
    server: FakeAnthropicServer, tmp_path: Path, make_engine: Callable[[Path], Engine]
) -> None:
    engine = make_engine(_project(tmp_path, server.url))
    server.reply('{"name": "Ada"}')
    assert engine.run("who").parsed(Person) == Person(name="Ada")
    server.reply('{"nom": "Ada"}')
    invalid = engine.run("who")
    with pytest.raises(errors.OutputInvalidError):
        invalid.parsed(Person)


def test_parsed_raises_output_invalid_when_the_model_type_rejects_a_valid_value(
    tmp_path: Path,
) -> None:
    """The JSON Schema passes, the stricter pydantic model does not: OutputInvalidError, cause
    kept."""

    class Strict(BaseModel):
        name: int

    root = _project(tmp_path, "http://127.0.0.1:9")
    result = Engine(root, client=FakeClient(['{"name": "Ada"}']), env={"TEST_ANTHROPIC_KEY": KEY})
    run = result.run("who")
    assert run.validation.valid
    with pytest.raises(errors.OutputInvalidError) as caught:
        run.parsed(Strict)
    assert caught.value.__cause__ is not None
    assert run.parsed(dict) == {"name": "Ada"}


def test_an_injected_client_still_gets_ignored_settings_in_metadata(tmp_path: Path) -> None:
    """The fake knows nothing of providers; the result still says what an anthropic profile does
    not send."""
    root = _project(tmp_path, "http://127.0.0.1:9")
    engine = Engine(root, client=FakeClient(["hi"]), env={"TEST_ANTHROPIC_KEY": KEY})
    result = engine.run("plain")
    assert result.prepared.ignored_settings == ("temperature",)
    assert result.metadata["ignored_settings"] == ["temperature"]


def test_the_request_hash_does_not_depend_on_the_endpoint(
    server: FakeAnthropicServer, tmp_path: Path, make_engine: Callable[[Path], Engine]
) -> None:
    """The same request through another proxy is the same request: same ``request_hash``."""
    engine = make_engine(_project(tmp_path, server.url))
    here = engine.prepare("who")
    there = engine.prepare("who", overrides={"endpoint": "https://proxy.example/anthropic"})
    assert there.target.endpoint == "https://proxy.example/anthropic"
    assert here.request_hash == there.request_hash


def test_openai_prepare_shows_the_system_text_and_the_dropped_top_k(tmp_path: Path) -> None:
    """Through the real openai SDK: the prompt-strategy instructions and JSON-mode note are in
    ``prepared.system`` exactly as sent; ``top_k`` is marked ignored and never sent."""
    with FakeOpenAIServer() as openai_server:
        (tmp_path / "prompts").mkdir()
        (tmp_path / "profiles").mkdir()
        (tmp_path / "prompts" / "who.prompt.md").write_text(
            "---\nprofile: gpt\noutput:\n  format: json_schema\n"
            f"  schema: {json.dumps(SCHEMA)}\n  strategy: prompt\n---\n"
            "## system\nYou extract names.\n\n## user\nAda wrote this.\n",
            encoding="utf-8",
        )
        (tmp_path / "prompts" / "mode.prompt.md").write_text(
            "---\nprofile: gpt\noutput: {format: json}\n---\nName a colour.\n", encoding="utf-8"
        )
        (tmp_path / "profiles" / "gpt.yaml").write_text(
            f"provider: openai\nmodel: gpt-4o\nendpoint: {openai_server.url}\n"
            "api_key_env: TEST_OPENAI_KEY\nsettings: {top_k: 3, temperature: 0.1, max_retries: 0}\n",
            encoding="utf-8",
        )
        client = OpenAIClient()
        engine = Engine(
            tmp_path, client=client, env={"TEST_OPENAI_KEY": "sk-test-openai-0123456789abcdef"}
        )
        for prompt_id, answer in (("who", '{"name": "Ada"}'), ("mode", '{"c": "red"}')):
            prepared = engine.prepare(prompt_id)
            assert prepared.ignored_settings == ("top_k",)
            openai_server.reply(answer)
            result = engine.run(prompt_id)
            sent = openai_server.requests[-1].body
            system = next(m["content"] for m in sent["messages"] if m["role"] == "system")
            assert system == prepared.system
            assert "top_k" not in sent
            assert sent["temperature"] == 0.1
            assert result.metadata["ignored_settings"] == ["top_k"]
            assert result.metadata["request_id"].startswith("req_fake_")
            assert result.validation.valid
        client.close()
