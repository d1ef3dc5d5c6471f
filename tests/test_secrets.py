"""A canary key must never show up in any output form of scriptorium."""

from __future__ import annotations

import logging
import pickle

import pytest

from scriptorium import errors
from scriptorium.llm.model import LLMRequest, LLMResponse
from scriptorium.testing import FakeClient
from scriptorium.usecase import DefaultOutputRepairer, RunRequest
from tests.conftest import RunnerFactory

CANARY = "sk-ant-canary-0123456789abcdefXYZ"


def _forms(obj: object) -> list[str]:
    forms = [repr(obj), str(obj), pickle.dumps(obj).decode("latin-1")]
    dump = getattr(obj, "model_dump_json", None)
    if callable(dump):
        forms.append(dump())
    return forms


def _assert_clean(obj: object) -> None:
    for form in _forms(obj):
        assert CANARY not in form


@pytest.mark.parametrize("source", ["env", "direct"])
def test_canary_key_absent_from_results_and_logs(
    make_runner: RunnerFactory, caplog: pytest.LogCaptureFixture, source: str
) -> None:
    """The key reaches the client and nothing else: not the result, prepared run or logs."""
    caplog.set_level(logging.DEBUG)
    client = FakeClient(['{"a": 1', '{"a": 1}'])
    env = {"ANTHROPIC_API_KEY": CANARY} if source == "env" else {}
    runner = make_runner(client, env=env, repairer=DefaultOutputRepairer(client))
    prompts_request = RunRequest(
        prompt_id="claude/hello", api_key=CANARY if source == "direct" else None
    )
    result = runner.run(prompts_request)
    _assert_clean(result)
    _assert_clean(result.prepared)
    _assert_clean(prompts_request)
    sent = client.requests[0]
    assert sent.api_key is not None
    assert sent.api_key.get_secret_value() == CANARY
    _assert_clean(sent)
    assert CANARY not in caplog.text


def test_canary_key_absent_from_errors(make_runner: RunnerFactory) -> None:
    """A client failure whose message holds the key is scrubbed at the boundary."""

    class Leaky:
        def generate(self, request: LLMRequest) -> LLMResponse:
            assert request.api_key is not None
            raise RuntimeError(f"auth failed for {request.api_key.get_secret_value()}")

    runner = make_runner(Leaky(), env={"ANTHROPIC_API_KEY": CANARY})
    with pytest.raises(errors.LLMGenerateError) as caught:
        runner.run(RunRequest(prompt_id="claude/hello"))
    _assert_clean(caught.value)
    assert caught.value.to_dict()["message"].count("[redacted]") == 1


def test_unpickled_requests_carry_no_key() -> None:
    """Pickling a request drops its key instead of writing it out."""
    request = RunRequest(prompt_id="x", api_key=CANARY)
    restored = pickle.loads(pickle.dumps(request))
    assert restored.api_key is not None
    assert restored.api_key.get_secret_value() == ""


def test_missing_env_error_names_the_variable_not_a_value(make_runner: RunnerFactory) -> None:
    """APIKeyEnvMissingError says which variable, and pickles with its fields."""
    runner = make_runner(FakeClient(), env={"OTHER": CANARY})
    with pytest.raises(errors.APIKeyEnvMissingError) as caught:
        runner.run(RunRequest(prompt_id="claude/hello"))
    restored = pickle.loads(pickle.dumps(caught.value))
    assert isinstance(restored, errors.APIKeyEnvMissingError)
    assert restored.env_var == "ANTHROPIC_API_KEY"
    _assert_clean(restored)
