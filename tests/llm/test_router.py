"""The provider router: dispatch by ``target.provider``, per-profile clients, custom adapters."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from scriptorium._testing.openai_server import FakeOpenAIServer
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.client import Client
from scriptorium.llm.model import LLMRequest, LLMResponse, Target
from scriptorium.llm.openai.client import OpenAIClient
from scriptorium.llm.retry import RetryHooks
from scriptorium.llm.router import ProviderConfig, Router
from scriptorium.prompt.model import Message


def make_request(
    provider: str,
    options: Mapping[str, Any] | None = None,
    source: str | None = None,
    **target: Any,
) -> LLMRequest:
    return LLMRequest(
        target=Target(provider=provider, **target),
        messages=(Message(role="user", content="hello"),),
        options=dict(options or {}),
        profile_source=source,
    )


class Echo:
    """A sync-only custom adapter that says which options it was built with."""

    def __init__(self, config: ProviderConfig) -> None:
        self.config = config

    def generate(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse(text=f"{self.config.provider}:{dict(self.config.options)}")


def test_fake_profiles_are_served_from_their_options() -> None:
    """provider fake answers with options.responses, keeping its turn across calls."""
    router = Router()
    options = {"responses": ["first", "second"]}
    texts = [router.generate(make_request("fake", options)).text for _ in range(3)]
    assert texts == ["first", "second", "second"]


def test_profiles_with_different_options_get_different_clients() -> None:
    """The client cache is keyed by options (and source), so two fake profiles do not share turns."""
    router = Router()
    a = router.generate(make_request("fake", {"responses": ["a"]}))
    b = router.generate(make_request("fake", {"responses": ["b"]}))
    assert (a.text, b.text) == ("a", "b")
    assert router.client_for("fake", {"responses": ["a"]}) is router.client_for(
        "fake", {"responses": ["a"]}
    )


def test_unknown_provider_is_a_config_error() -> None:
    """An unregistered provider fails with reason config, listing the known ones."""
    with pytest.raises(LLMGenerateError) as caught:
        Router().generate(make_request("mistral"))
    assert caught.value.reason == "config"
    assert "openai" in str(caught.value)


def test_register_routes_a_custom_provider_per_profile() -> None:
    """A registered factory sees the profile's options and source."""
    router = Router()
    router.register("echo", Echo)
    response = router.generate(make_request("echo", {"x": 1}, source="/p/echo.yaml"))
    assert response.text == "echo:{'x': 1}"
    assert "echo" in router.providers


def test_a_shared_adapter_is_built_once_and_sees_no_options() -> None:
    """per_profile=False builds one client for every profile."""
    built: list[ProviderConfig] = []

    def factory(config: ProviderConfig) -> Client:
        built.append(config)
        return Echo(config)

    router = Router()
    router.register("shared", factory, per_profile=False)
    router.generate(make_request("shared", {"a": 1}))
    router.generate(make_request("shared", {"a": 2}))
    assert len(built) == 1
    assert dict(built[0].options) == {}


def test_constructor_factories_replace_builtins() -> None:
    """factories= overrides a built-in provider (here: openai answered offline)."""
    router = Router(factories={"openai": Echo})
    assert router.generate(make_request("openai", {"k": "v"})).text == "openai:{'k': 'v'}"


def test_a_factory_that_breaks_is_a_config_error_with_its_cause() -> None:
    """A foreign exception while building a client comes out as LLMGenerateError(config)."""

    def broken(config: ProviderConfig) -> Client:
        raise RuntimeError("no such thing")

    router = Router(factories={"broken": broken})
    with pytest.raises(LLMGenerateError) as caught:
        router.generate(make_request("broken"))
    assert caught.value.reason == "config"
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_agenerate_runs_a_sync_only_adapter_in_a_thread() -> None:
    """The async port works for adapters that only have generate()."""
    router = Router(factories={"echo": Echo})
    response = asyncio.run(router.agenerate(make_request("echo")))
    assert response.text == "echo:{}"


def test_replay_records_through_another_provider_then_replays(tmp_path: Path) -> None:
    """A record profile wraps record_provider; the cassette path is relative to the profile file."""
    source = str(tmp_path / "profiles" / "ci.yaml")
    record = {
        "cassette": "cassettes/ci.jsonl",
        "mode": "record",
        "record_provider": "fake",
        "responses": ["recorded answer"],
    }
    router = Router()
    recorded = router.generate(make_request("replay", record, source, model="m"))
    assert recorded.text == "recorded answer"
    assert (tmp_path / "profiles" / "cassettes" / "ci.jsonl").is_file()
    replay = {"cassette": "cassettes/ci.jsonl"}
    replayed = Router().generate(make_request("replay", replay, source, model="m"))
    assert (replayed.text, replayed.attempts) == ("recorded answer", 0)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"cassette": "c.jsonl", "mode": "record"},
        {"cassette": "c.jsonl", "mode": "record", "record_provider": "replay"},
        {"cassette": "c.jsonl", "mode": "rewind"},
    ],
)
def test_bad_replay_options_are_config_errors(options: dict[str, Any], tmp_path: Path) -> None:
    """No cassette, no or a looping record_provider, or an unknown mode fail with reason config."""
    with pytest.raises(LLMGenerateError) as caught:
        Router().generate(make_request("replay", options, str(tmp_path / "p.yaml")))
    assert caught.value.reason == "config"


def test_openai_requests_go_to_one_shared_openai_adapter() -> None:
    """provider openai reaches the OpenAI adapter, built once with the router's hooks."""
    hooks = RetryHooks(sleep=lambda _: None)
    router = Router(hooks=hooks)
    with FakeOpenAIServer() as server:
        request = LLMRequest(
            target=Target(provider="openai", model="gpt-4o", endpoint=server.url),
            api_key="sk-test-router",
            messages=(Message(role="user", content="hello"),),
            options={"anything": 1},
        )
        server.fail(500)
        response = router.generate(request)
        adapter = router.client_for("openai")
        assert isinstance(adapter, OpenAIClient)
        adapter.close()
    assert (response.text, response.attempts) == ("ok", 2)
    assert router.client_for("openai", {"other": 2}) is adapter


def test_verify_of_a_provider_without_verify_checks_configuration() -> None:
    """fake has no real endpoint: verify builds the client and reports the configuration good."""
    response = Router().verify(Target(provider="fake", model="m"), options={"responses": ["x"]})
    assert response.metadata == {"verified": "configuration"}
    with pytest.raises(LLMGenerateError):
        Router().verify(Target(provider="fake", model="m"), options={})


def test_importing_the_router_imports_no_provider_sdk() -> None:
    """Provider SDKs load on first use only."""
    code = (
        "import sys, scriptorium.llm.router as r; r.Router();"
        "assert 'openai' not in sys.modules and 'anthropic' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
