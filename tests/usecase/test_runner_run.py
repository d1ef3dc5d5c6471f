"""Runner.run / arun: generation, validation, repair rules, usage, timing and error translation."""

from __future__ import annotations

import asyncio
import json

import pytest

from scriptorium import errors
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.testing import FakeClient
from scriptorium.usecase import DefaultOutputRepairer, Overrides, RunRequest
from tests.conftest import RunnerFactory

CONTACT = RunRequest(prompt_id="extract/contact", artifacts={"document": "doc.txt"})
GOOD = '{"name": "Ada Lovelace", "email": "ada@example.com"}'


def test_valid_output_is_parsed_and_recorded(make_runner: RunnerFactory) -> None:
    """A valid JSON answer gives value, one initial attempt and a digest of the text."""
    client = FakeClient([LLMResponse(text=GOOD, usage=Usage(input_tokens=10, output_tokens=5))])
    result = make_runner(client).run(CONTACT)
    assert result.validation.valid
    assert result.validation.value == json.loads(GOOD)
    assert result.validation.parse == "strict"
    assert result.output.text == GOOD
    assert result.output.sha256.startswith("sha256:")
    assert [a.kind for a in result.attempts] == ["initial"]
    assert result.usage.input_tokens == 10
    assert result.usage.llm_calls == 1
    assert result.run_id == "run-1"
    assert result.raise_for_validation() is result


def test_request_carries_prompt_settings_and_structure(make_runner: RunnerFactory) -> None:
    """The LLMRequest holds the rendered prompt, settings and the structured-output spec."""
    client = FakeClient([GOOD])
    make_runner(client).run(CONTACT)
    sent = client.requests[0]
    assert sent.system == "Extract the contact as JSON."
    assert sent.messages[0].content == "Ada Lovelace <ada@example.com>"
    assert sent.structured_output is not None
    assert sent.structured_output.schema_ is not None
    assert sent.structured_output.format == "json_schema"


def test_invalid_output_is_a_result_not_an_exception(make_runner: RunnerFactory) -> None:
    """Invalid output is reported; raise_for_validation turns it into OutputInvalidError."""
    result = make_runner(FakeClient(['{"name": "Ada"}'])).run(CONTACT)
    assert not result.validation.valid
    assert any(i.keyword == "required" for i in result.validation.issues)
    with pytest.raises(errors.OutputInvalidError):
        result.raise_for_validation()


def test_repair_turns_an_invalid_output_into_a_valid_one(make_runner: RunnerFactory) -> None:
    """One repair attempt fixes the output; usage and attempts cover both generations."""
    client = FakeClient(
        [
            LLMResponse(text='{"name": "Ada"}', usage=Usage(input_tokens=10, output_tokens=3)),
            LLMResponse(text=GOOD, usage=Usage(input_tokens=20, output_tokens=6)),
        ]
    )
    runner = make_runner(client, repairer=DefaultOutputRepairer(client))
    result = runner.run(CONTACT)
    assert result.validation.valid
    assert result.validation.repaired
    assert result.validation.attempts == 2
    assert [a.kind for a in result.attempts] == ["initial", "repair"]
    assert [a.valid for a in result.attempts] == [False, True]
    assert result.usage.input_tokens == 30
    assert result.usage.output_tokens == 9
    assert result.usage.llm_calls == 2
    repair_request = client.requests[1]
    assert repair_request.messages[-2].role == "assistant"
    assert repair_request.messages[-2].content == '{"name": "Ada"}'
    assert "email" in repair_request.messages[-1].content


def test_repairs_show_only_the_last_failed_output(make_runner: RunnerFactory) -> None:
    """Each repair request holds the latest failure only, so its size does not grow."""
    client = FakeClient(["first bad", "second bad", "third bad"])
    runner = make_runner(client, repairer=DefaultOutputRepairer(client))
    result = runner.run(RunRequest(prompt_id="classify", profile="offline", inputs={"text": "x"}))
    assert not result.validation.valid
    assert len(result.attempts) == 3  # initial + repair_attempts (2)
    second, third = client.requests[1], client.requests[2]
    assert len(second.messages) == len(third.messages)
    assert second.messages[-2].content == "first bad"
    assert third.messages[-2].content == "second bad"
    assert all("first bad" not in m.content for m in third.messages)


def test_repair_attempts_override_wins_even_at_zero(make_runner: RunnerFactory) -> None:
    """overrides.repair_attempts=0 disables repair although the definition allows one."""
    client = FakeClient(['{"name": "Ada"}', GOOD])
    runner = make_runner(client, repairer=DefaultOutputRepairer(client))
    request = CONTACT.model_copy(update={"overrides": Overrides(repair_attempts=0)})
    result = runner.run(request)
    assert not result.validation.valid
    assert client.calls == 1


def test_no_repair_without_a_repairer(make_runner: RunnerFactory) -> None:
    """Without a repairer an invalid output stays as it is."""
    client = FakeClient(['{"name": "Ada"}', GOOD])
    result = make_runner(client).run(CONTACT)
    assert not result.validation.valid
    assert client.calls == 1


def test_no_repair_for_text_output(make_runner: RunnerFactory) -> None:
    """Text prompts are never repaired, even when truncated."""
    client = FakeClient([LLMResponse(text="Hel", finish_reason="length"), "Hello"])
    runner = make_runner(client, repairer=DefaultOutputRepairer(client))
    result = runner.run(RunRequest(prompt_id="greet", inputs={"name": "Ada"}))
    assert client.calls == 1
    assert [i.keyword for i in result.validation.issues] == ["truncated"]


@pytest.mark.parametrize(("finish", "keyword"), [("length", "truncated"), ("refusal", "refusal")])
def test_no_repair_after_truncation_or_refusal(
    make_runner: RunnerFactory, finish: str, keyword: str
) -> None:
    """A truncated or refused generation is recorded as an issue and never repaired."""
    client = FakeClient([LLMResponse(text='{"name": "Ada", "em', finish_reason=finish), GOOD])
    runner = make_runner(client, repairer=DefaultOutputRepairer(client))
    result = runner.run(CONTACT)
    assert client.calls == 1
    assert not result.validation.valid
    assert result.validation.issues[0].keyword == keyword
    assert result.finish_reason == finish


def test_a_failed_repair_call_keeps_the_first_generation(make_runner: RunnerFactory) -> None:
    """If the repair call fails, the result still holds the first output and its usage."""
    failure = errors.LLMGenerateError("overloaded", reason="overloaded", attempts=3)
    client = FakeClient([LLMResponse(text='{"name": "Ada"}', usage=Usage(input_tokens=7)), failure])
    runner = make_runner(client, repairer=DefaultOutputRepairer(client))
    result = runner.run(CONTACT)
    assert not result.validation.valid
    assert result.validation.issues[-1].keyword == "repair_failed"
    assert result.usage.input_tokens == 7
    assert result.usage.llm_calls == 4  # one successful request + three failed ones


def test_client_exceptions_become_llm_generate_errors(make_runner: RunnerFactory) -> None:
    """Any exception from the client comes out as LLMGenerateError with the cause kept."""
    boom = RuntimeError("socket on fire")
    with pytest.raises(errors.LLMGenerateError) as caught:
        make_runner(FakeClient([boom])).run(CONTACT)
    assert caught.value.__cause__ is boom
    assert caught.value.prompt_id == "extract/contact"
    assert caught.value.provider == "fake"


def test_client_llm_errors_pass_through_with_context(make_runner: RunnerFactory) -> None:
    """The client's own LLMGenerateError is kept, with the run's context filled in."""
    err = errors.LLMGenerateError("limited", reason="rate_limited", retryable=True)
    with pytest.raises(errors.LLMGenerateError) as caught:
        make_runner(FakeClient([err])).run(CONTACT)
    assert caught.value is err
    assert caught.value.reason == "rate_limited"
    assert caught.value.profile == "offline"


def test_a_client_returning_garbage_is_an_invalid_response(make_runner: RunnerFactory) -> None:
    """A client that returns something other than an LLMResponse is reported, not trusted."""

    class Broken:
        def generate(self, request: LLMRequest) -> LLMResponse:
            return "not a response"  # type: ignore[return-value]

    with pytest.raises(errors.LLMGenerateError) as caught:
        make_runner(Broken()).run(CONTACT)
    assert caught.value.reason == "invalid_response"


def test_arun_matches_run(make_runner: RunnerFactory) -> None:
    """The async path gives the same result as the sync one."""
    sync = make_runner(FakeClient([GOOD])).run(CONTACT)
    asynced = asyncio.run(make_runner(FakeClient([GOOD])).arun(CONTACT))
    assert asynced == sync


def test_arun_repairs_like_run(make_runner: RunnerFactory) -> None:
    """Async repair follows the same rules as sync repair."""
    client = FakeClient(['{"name": "Ada"}', GOOD])
    runner = make_runner(client, repairer=DefaultOutputRepairer(client))
    result = asyncio.run(runner.arun(CONTACT))
    assert result.validation.repaired
    assert len(result.attempts) == 2


def test_arun_runs_a_sync_only_client_in_a_thread(make_runner: RunnerFactory) -> None:
    """A client with only generate() still works under arun."""

    class SyncOnly:
        def __init__(self) -> None:
            self.calls = 0

        def generate(self, request: LLMRequest) -> LLMResponse:
            self.calls += 1
            return LLMResponse(text=GOOD)

    client = SyncOnly()
    result = asyncio.run(make_runner(client).arun(CONTACT))
    assert result.validation.valid
    assert client.calls == 1


def test_arun_translates_async_client_errors(make_runner: RunnerFactory) -> None:
    """Async client exceptions come out as LLMGenerateError too."""
    with pytest.raises(errors.LLMGenerateError) as caught:
        asyncio.run(make_runner(FakeClient([ValueError("bad")])).arun(CONTACT))
    assert isinstance(caught.value.__cause__, ValueError)


def test_lenient_parse_records_fixes(make_runner: RunnerFactory) -> None:
    """A fenced answer is recovered by the lenient parser and the fix is recorded."""
    result = make_runner(FakeClient(["```json\n" + GOOD + "\n```"])).run(CONTACT)
    assert result.validation.valid
    assert result.validation.parse == "lenient"
    assert result.validation.fixes


def test_run_state_is_per_request(make_runner: RunnerFactory) -> None:
    """Two runs on one Runner do not share attempts, usage or ids."""
    client = FakeClient([LLMResponse(text=GOOD, usage=Usage(output_tokens=4))])
    runner = make_runner(client)
    first, second = runner.run(CONTACT), runner.run(CONTACT)
    assert first.run_id != second.run_id
    assert second.usage.output_tokens == 4
    assert len(second.attempts) == 1
