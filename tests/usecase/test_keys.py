"""Where a key enters a run: a blank key is no key, wherever it came from; any other value is a
key as given, however short (the placeholders local servers document)."""

from __future__ import annotations

import json

import pytest
from pydantic import SecretStr

from scriptorium import errors, redaction
from scriptorium.testing import FakeClient
from scriptorium.usecase import RunRequest
from tests.conftest import RunnerFactory

ENV_KEY = "sk-env-key-7f3a9c1d"
BLANKS = ["", " ", "\t", " \n ", SecretStr(""), SecretStr("   ")]


@pytest.mark.parametrize("blank", BLANKS, ids=repr)
def test_a_blank_request_key_is_no_key(blank: str | SecretStr) -> None:
    """The model itself says so: ``api_key`` of an empty or blank value is None, in Python and
    in JSON alike."""
    assert RunRequest(prompt_id="greet", api_key=blank).api_key is None
    if isinstance(blank, str):
        body = json.dumps({"prompt_id": "greet", "api_key": blank})
        assert RunRequest.model_validate_json(body).api_key is None


@pytest.mark.parametrize("blank", BLANKS, ids=repr)
def test_a_blank_request_key_falls_back_to_the_profile_variable(
    make_runner: RunnerFactory, blank: str | SecretStr
) -> None:
    """Exactly as with no key at all: the profile's variable supplies the key."""
    client = FakeClient(["hi"])
    runner = make_runner(client, env={"ANTHROPIC_API_KEY": ENV_KEY})
    runner.run(RunRequest(prompt_id="claude/hello", api_key=blank))
    key = client.requests[0].api_key
    assert key is not None
    assert key.get_secret_value() == ENV_KEY


def test_a_blank_request_key_with_no_variable_set_is_a_missing_key(
    make_runner: RunnerFactory,
) -> None:
    with pytest.raises(errors.APIKeyEnvMissingError):
        make_runner(FakeClient(["hi"])).run(RunRequest(prompt_id="claude/hello", api_key=" "))


@pytest.mark.parametrize("short", ["EMPTY", "none", "ollama", "Q", " Zx12 "])
def test_a_short_request_key_is_a_key_as_given(make_runner: RunnerFactory, short: str) -> None:
    """No minimum length: the placeholders vLLM, llama.cpp and Ollama document reach the client
    exactly as given, and win over the profile's variable like any direct key."""
    client = FakeClient(["hi"])
    runner = make_runner(client, env={"ANTHROPIC_API_KEY": ENV_KEY})
    runner.run(RunRequest(prompt_id="claude/hello", api_key=short))
    key = client.requests[0].api_key
    assert key is not None
    assert key.get_secret_value() == short


@pytest.mark.parametrize("value", ["EMPTY", "none", "x"])
def test_a_short_variable_value_is_a_key_as_given(make_runner: RunnerFactory, value: str) -> None:
    client = FakeClient(["hi"])
    make_runner(client, env={"ANTHROPIC_API_KEY": value}).run(RunRequest(prompt_id="claude/hello"))
    key = client.requests[0].api_key
    assert key is not None
    assert key.get_secret_value() == value


@pytest.mark.parametrize("value", ["", "   ", "\t"])
def test_a_variable_holding_no_key_is_a_missing_key(make_runner: RunnerFactory, value: str) -> None:
    """Blank in the environment: ``api_key_env_missing`` naming the variable."""
    client = FakeClient(["hi"])
    with pytest.raises(errors.APIKeyEnvMissingError) as caught:
        make_runner(client, env={"ANTHROPIC_API_KEY": value}).run(
            RunRequest(prompt_id="claude/hello")
        )
    assert caught.value.env_var == "ANTHROPIC_API_KEY"
    assert client.calls == 0


def test_short_values_are_left_alone_by_redaction_and_long_ones_replaced() -> None:
    """A secret of eight characters or more is replaced wherever it occurs; a shorter value is a
    placeholder and left alone (scrubbing ``none`` would mangle ordinary words)."""
    text = "none of it: sk-long-secret and sk-long-secret again"
    out = redaction.redact(text, ["none", "sk-long-secret"])
    assert out.startswith("none of it: ")
    assert "sk-long-secret" not in out
    assert redaction.SECRET_MIN_CHARS == 8
