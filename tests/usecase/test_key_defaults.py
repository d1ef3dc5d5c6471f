"""Which variable a profile's key comes from when it names none: the provider's conventional
one, as its SDK would read it; and what is said when that is unset."""

from __future__ import annotations

from typing import Any

import pytest

from scriptorium import errors
from scriptorium.llm.registry import default_registry
from scriptorium.profile.model import Profile
from scriptorium.usecase.model import RunRequest
from scriptorium.usecase.prepare import credential, resolve_endpoint, target_for

KEY = "sk-conventional-key-0001"


def _credential(
    provider: str, env: dict[str, str], **fields: Any
) -> tuple[str | None, str | None, str | None]:
    profile = Profile(name="p", provider=provider, model="m", **fields)
    spec = default_registry().get(provider)
    request = RunRequest(prompt_id="x")
    target = resolve_endpoint(
        target_for(profile, request, needs_key=spec.needs_model), profile, spec, env
    )
    found = credential(profile, None, env, spec.route_for(profile.options, "p"), target=target)
    return found.key, found.env_var, found.source


@pytest.mark.parametrize(
    ("provider", "options", "variable"),
    [
        ("anthropic", {}, "ANTHROPIC_API_KEY"),
        ("openai", {}, "OPENAI_API_KEY"),
        ("gemini", {}, "GEMINI_API_KEY"),
        ("gemini", {}, "GOOGLE_API_KEY"),
        ("openai", {"platform": "azure", "api_version": "2024-10-21"}, "AZURE_OPENAI_API_KEY"),
    ],
)
def test_a_profile_naming_no_variable_reads_the_conventional_one(
    provider: str, options: dict[str, Any], variable: str
) -> None:
    env = {variable: KEY}
    if options.get("platform") == "azure":
        env["AZURE_OPENAI_ENDPOINT"] = "https://res.openai.azure.com"
    assert _credential(provider, env, options=options) == (KEY, variable, "default")


def test_gemini_reads_its_own_variable_before_googles() -> None:
    env = {"GEMINI_API_KEY": KEY, "GOOGLE_API_KEY": "sk-the-other-key-0002"}
    assert _credential("gemini", env)[1] == "GEMINI_API_KEY"


def test_a_blank_conventional_variable_is_passed_over() -> None:
    env = {"GEMINI_API_KEY": "  ", "GOOGLE_API_KEY": KEY}
    assert _credential("gemini", env)[1] == "GOOGLE_API_KEY"


def test_openai_base_url_from_its_variable_still_reads_the_conventional_key() -> None:
    env = {"OPENAI_BASE_URL": "https://proxy.example.com/v1", "OPENAI_API_KEY": KEY}
    assert _credential("openai", env) == (KEY, "OPENAI_API_KEY", "default")


def test_a_named_variable_is_the_profiles() -> None:
    env = {"MY_KEY": KEY, "ANTHROPIC_API_KEY": "sk-not-this-one-0003"}
    assert _credential("anthropic", env, api_key_env="MY_KEY") == (KEY, "MY_KEY", "profile")


@pytest.mark.parametrize(
    ("provider", "variable"),
    [
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("openai", "OPENAI_API_KEY"),
        ("gemini", "GEMINI_API_KEY"),
    ],
)
@pytest.mark.parametrize("value", [None, "", "   "])
def test_an_unset_conventional_variable_is_a_required_key_naming_it(
    provider: str, variable: str, value: str | None
) -> None:
    env = {} if value is None else {variable: value}
    with pytest.raises(errors.APIKeyRequiredError) as caught:
        _credential(provider, env)
    assert variable in caught.value.message
    assert caught.value.env_var == variable


def test_an_unset_named_variable_is_still_a_missing_variable() -> None:
    with pytest.raises(errors.APIKeyEnvMissingError) as caught:
        _credential("anthropic", {"ANTHROPIC_API_KEY": KEY}, api_key_env="MY_KEY")
    assert caught.value.env_var == "MY_KEY"


def test_a_profile_with_its_own_public_endpoint_names_its_variable() -> None:
    """OpenAI's variable is not sent to somebody else's endpoint."""
    env = {"OPENAI_API_KEY": KEY}
    with pytest.raises(errors.APIKeyRequiredError):
        _credential("openai", env, endpoint="https://gateway.example.com/v1")


@pytest.mark.parametrize(
    "endpoint",
    ["http://127.0.0.1:11434/v1", "http://localhost:8000/v1", "http://[::1]:1234/v1"],
)
def test_a_profile_on_a_loopback_endpoint_may_send_no_key(endpoint: str) -> None:
    assert _credential("openai", {"OPENAI_API_KEY": KEY}, endpoint=endpoint) == (None, None, None)


@pytest.mark.parametrize(
    "endpoint", ["https://10.0.0.5/v1", "https://192.168.1.20:8080/v1", "https://gpu.internal/v1"]
)
def test_a_profile_on_a_private_endpoint_may_send_no_key(endpoint: str) -> None:
    assert _credential("openai", {}, endpoint=endpoint)[0] is None


def test_azure_with_its_resource_endpoint_reads_its_conventional_variable() -> None:
    """An Azure profile always names its resource: that endpoint is Azure's own."""
    options = {"platform": "azure", "api_version": "2024-10-21"}
    env = {"AZURE_OPENAI_API_KEY": KEY}
    found = _credential("openai", env, options=options, endpoint="https://r.openai.azure.com")
    assert found == (KEY, "AZURE_OPENAI_API_KEY", "default")


def test_anthropic_with_an_endpoint_reads_its_variable_as_its_sdk_would() -> None:
    env = {"ANTHROPIC_API_KEY": KEY}
    found = _credential("anthropic", env, endpoint="https://gateway.example.com")
    assert found == (KEY, "ANTHROPIC_API_KEY", "default")
