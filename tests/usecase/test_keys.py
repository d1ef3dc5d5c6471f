"""Where a key enters a run: a blank key is no key, a key under eight characters is no key
either (refused, never quoted), wherever it came from."""

from __future__ import annotations

import json

import pytest
from pydantic import SecretStr

from scriptorium import errors
from scriptorium.llm.model import MIN_KEY_CHARS
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


@pytest.mark.parametrize("short", ["Q", "Q9 Z", "Zx-1234", " Zx12345 "])
def test_a_short_request_key_is_refused_without_being_quoted(
    make_runner: RunnerFactory, short: str
) -> None:
    """Under eight characters (surrounding blanks not counted): ``invalid_request`` on
    ``api_key``, before any call, the value in no message or field."""
    client = FakeClient(["hi"])
    runner = make_runner(client, env={"ANTHROPIC_API_KEY": ENV_KEY})
    with pytest.raises(errors.InvalidRequestError) as caught:
        runner.run(RunRequest(prompt_id="claude/hello", api_key=short))
    assert caught.value.field == "api_key"
    assert str(MIN_KEY_CHARS) in caught.value.message
    assert short.strip() not in str(caught.value.to_dict())
    assert client.calls == 0


def test_eight_characters_make_a_key(make_runner: RunnerFactory) -> None:
    client = FakeClient(["hi"])
    make_runner(client).run(RunRequest(prompt_id="claude/hello", api_key="12345678"))
    assert client.calls == 1


@pytest.mark.parametrize("value", ["", "   ", "Q", "Zx-1234"])
def test_a_variable_holding_no_usable_key_is_a_missing_key(
    make_runner: RunnerFactory, value: str
) -> None:
    """Blank or short in the environment: ``api_key_env_missing`` naming the variable, never
    its value."""
    client = FakeClient(["hi"])
    with pytest.raises(errors.APIKeyEnvMissingError) as caught:
        make_runner(client, env={"ANTHROPIC_API_KEY": value}).run(
            RunRequest(prompt_id="claude/hello")
        )
    assert caught.value.env_var == "ANTHROPIC_API_KEY"
    if value.strip():
        assert value not in caught.value.message
    assert client.calls == 0
