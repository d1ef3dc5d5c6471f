"""The run machine driven by hand: scripted outcomes in, steps and the result out, no client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.testing import FixedClock
from scriptorium.usecase.flow import Answered, Generate, Repair, RunFlow
from scriptorium.usecase.plan import Plan
from scriptorium.usecase.repair import RepairResult
from tests.usecase.plans import CLASSIFY, CONTACT, GREET, VALIDATOR, plan_of

GOOD = '{"name": "Ada", "email": "ada@example.com"}'
HALF = '{"name": "Ada"}'
START = datetime(2026, 1, 1, tzinfo=UTC)


def _flow(plan: Plan, *, can_repair: bool = True, clock: FixedClock | None = None) -> RunFlow:
    return RunFlow(
        plan,
        validator=VALIDATOR,
        can_repair=can_repair,
        run_id="run-7",
        started=START,
        clock=clock or FixedClock(START + timedelta(seconds=2)),
    )


def _response(text: str, **fields: object) -> LLMResponse:
    return LLMResponse.model_validate({"text": text, **fields})


def test_a_valid_answer_is_one_generate_step_and_a_valid_result() -> None:
    """The first step generates the plan's request, attempt 1; a valid answer ends the run."""
    plan = plan_of(CONTACT)
    flow = _flow(plan)
    step = flow.next_step()
    assert isinstance(step, Generate)
    assert (step.attempt, step.kind, step.request) == (1, "initial", plan.request)
    flow.send(_response(GOOD, usage=Usage(input_tokens=3, output_tokens=2)))
    assert flow.next_step() is None
    result = flow.result()
    assert result.validation.valid
    assert not result.validation.repaired
    assert result.validation.value == {"name": "Ada", "email": "ada@example.com"}
    assert [a.kind for a in result.attempts] == ["initial"]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (3, 2)
    assert result.prepared == plan.prepared
    assert (result.run_id, result.started_at) == ("run-7", START)
    assert result.duration_ms == 2000.0


def test_an_invalid_answer_asks_for_a_repair_of_it_and_the_repair_is_judged_again() -> None:
    """A Repair step carries the failed output, its issues and the repair's number; a valid
    repair ends the run repaired, with usage summed over both generations."""
    plan = plan_of(CONTACT)
    flow = _flow(plan)
    flow.send(_response(HALF, usage=Usage(input_tokens=10, output_tokens=1)))
    step = flow.next_step()
    assert isinstance(step, Repair)
    assert (step.attempt, step.kind, step.request) == (2, "repair", plan.request)
    assert step.context.previous_output == HALF
    assert step.context.attempt == 1
    assert any(issue.keyword == "required" for issue in step.context.issues)
    repaired = _response(GOOD, usage=Usage(input_tokens=12, output_tokens=4))
    flow.send(RepairResult(response=repaired))
    assert flow.next_step() is None
    result = flow.result()
    assert result.validation.valid
    assert result.validation.repaired
    assert result.validation.attempts == 2
    assert [a.kind for a in result.attempts] == ["initial", "repair"]
    assert [a.valid for a in result.attempts] == [False, True]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (22, 5)
    assert result.output.text == GOOD


def test_repairs_stop_at_the_contracts_number() -> None:
    """classify allows two repairs: three invalid generations, then the run ends invalid."""
    flow = _flow(plan_of(CLASSIFY))
    flow.send(_response("nope"))
    for number in (1, 2):
        step = flow.next_step()
        assert isinstance(step, Repair)
        assert step.context.attempt == number
        flow.send(RepairResult(response=_response("still nope")))
    assert flow.next_step() is None
    result = flow.result()
    assert not result.validation.valid
    assert len(result.attempts) == 3


def test_no_repair_without_a_repairer_nor_for_a_text_output() -> None:
    """Repairs need a repairer and a JSON format."""
    without = _flow(plan_of(CONTACT), can_repair=False)
    without.send(_response(HALF))
    assert without.next_step() is None
    assert not without.result().validation.valid
    text = _flow(plan_of(GREET))
    text.send(_response(""))
    assert text.next_step() is None


@pytest.mark.parametrize(("finish", "keyword"), [("length", "truncated"), ("refusal", "refusal")])
def test_a_truncated_or_refused_generation_is_invalid_and_never_repaired(
    finish: str, keyword: str
) -> None:
    """The issue comes first, the verdict is invalid even for a valid-looking text, and no repair
    is asked (it would not help)."""
    flow = _flow(plan_of(CONTACT))
    flow.send(_response(GOOD, finish_reason=finish))
    assert flow.next_step() is None
    validation = flow.result().validation
    assert not validation.valid
    assert validation.value is None
    assert validation.issues[0].keyword == keyword


@pytest.mark.parametrize(
    "finish", ["UNEXPECTED_TOOL_CALL", "pause_turn", "SOMETHING_NEW", "tool_use"]
)
def test_any_other_ending_than_a_normal_stop_is_invalid_and_never_repaired(finish: str) -> None:
    """An ending a provider names its own way (kept as it names it) is no valid answer by
    itself: keyword ``finish_reason``, first, and no repair; an empty text after it too."""
    for text in (GOOD, ""):
        flow = _flow(plan_of(CONTACT))
        flow.send(_response(text, finish_reason=finish))
        assert flow.next_step() is None
        validation = flow.result().validation
        assert not validation.valid
        assert validation.value is None
        assert validation.issues[0].keyword == "finish_reason"
        assert finish in validation.issues[0].message
    plain = _flow(plan_of(GREET))
    plain.send(_response("", finish_reason=finish))
    assert not plain.result().validation.valid


def test_a_failed_repair_ends_the_repairs_as_an_issue_and_keeps_what_was_paid() -> None:
    """The repair's failure is an outcome: no raise, a repair_failed issue, and its HTTP requests
    counted in the last generation's llm_calls."""
    flow = _flow(plan_of(CONTACT))
    flow.send(_response(HALF, attempts=1))
    assert isinstance(flow.next_step(), Repair)
    flow.send(LLMGenerateError("down", reason="server_error", attempts=3))
    assert flow.next_step() is None
    result = flow.result()
    assert result.validation.issues[-1].keyword == "repair_failed"
    assert result.validation.issues[-1].message == "repair 1 failed: down"
    assert [a.kind for a in result.attempts] == ["initial"]
    assert result.attempts[0].usage.llm_calls == 4
    assert result.output.text == HALF


def test_a_failed_generation_is_raised_as_itself() -> None:
    """Without an output there is nothing to report: send raises the call's error."""
    flow = _flow(plan_of(GREET))
    error = LLMGenerateError("overloaded", reason="overloaded")
    with pytest.raises(LLMGenerateError) as caught:
        flow.send(error)
    assert caught.value is error
    assert flow.next_step() is None


def test_an_answered_run_starts_with_the_batch_answer_step() -> None:
    """With answer, the first step is Answered (kind batch) over the same request; repairs follow
    as usual."""
    plan = plan_of(CONTACT)

    def answer(request: LLMRequest) -> LLMResponse:
        return _response(HALF)

    flow = RunFlow(
        plan,
        validator=VALIDATOR,
        can_repair=True,
        run_id="r",
        started=START,
        clock=FixedClock(),
        answer=answer,
    )
    step = flow.next_step()
    assert isinstance(step, Answered)
    assert (step.attempt, step.kind, step.request, step.answer) == (
        1,
        "batch",
        plan.request,
        answer,
    )
    flow.send(step.answer(step.request))
    assert isinstance(flow.next_step(), Repair)


def test_the_clock_is_read_once_for_the_end() -> None:
    """The start is given; the flow reads the clock only when it builds the result."""
    readings: list[datetime] = []

    def clock() -> datetime:
        readings.append(START)
        return START

    flow = RunFlow(
        plan_of(GREET),
        validator=VALIDATOR,
        can_repair=False,
        run_id="r",
        started=START,
        clock=clock,
    )
    flow.send(_response("Hi"))
    assert readings == []
    flow.result()
    assert len(readings) == 1


def test_misuse_is_a_programming_error() -> None:
    """A result before the end, an outcome after it, or an outcome of the wrong kind."""
    flow = _flow(plan_of(CONTACT))
    with pytest.raises(RuntimeError):
        flow.result()
    with pytest.raises(TypeError):
        flow.send(RepairResult(response=_response(GOOD)))
    flow.send(_response(HALF))
    with pytest.raises(TypeError):
        flow.send(_response(GOOD))
    flow.send(RepairResult(response=_response(GOOD)))
    with pytest.raises(RuntimeError):
        flow.send(_response(GOOD))


def test_the_metadata_keys_are_always_there() -> None:
    """The last generation's metadata, with the keys consumers read filled with None and the
    prepared run's ignored settings when the client did not say."""
    flow = _flow(plan_of(GREET))
    flow.send(_response("Hi", metadata={"request_id": "req-1"}))
    metadata = flow.result().metadata
    assert metadata["request_id"] == "req-1"
    assert {"strategy", "service_tier", "pricing", "ignored_settings"} <= set(metadata)
