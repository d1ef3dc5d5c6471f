"""Reasoning through the run, with in-process clients: the settings merged from profile and
overrides and in the request hash only when given, the reasoning text kept apart from the output
(its digest, its validation, its partial values), reasoning tokens per attempt and summed, and the
stream's ReasoningDelta events."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from pydantic import TypeAdapter, ValidationError

import scriptorium
from scriptorium import errors
from scriptorium.hashing import hash_json, hash_text
from scriptorium.llm.client import ReasoningChunk
from scriptorium.llm.model import LLMRequest, LLMResponse, Target, Usage
from scriptorium.llm.streaming import response_pieces
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message
from scriptorium.testing import FakeClient
from scriptorium.usecase import (
    DefaultOutputRepairer,
    Done,
    Overrides,
    PartialValue,
    ReasoningDelta,
    RunRequest,
    StreamEvent,
    TextDelta,
)
from tests.conftest import PROFILES, RunnerFactory

CONTACT = RunRequest(prompt_id="extract/contact", artifacts={"document": "doc.txt"})
GREET = RunRequest(prompt_id="greet", inputs={"name": "Ada"})
GOOD = '{"name": "Ada Lovelace", "email": "ada@example.com"}'
# Reasoning that reads as JSON, and as a different value: it must never be the output's.
THOUGHT = '{"name": "not this one"} Let me find the contact.'


def _response(text: str, reasoning: str | None = THOUGHT, tokens: int = 7) -> LLMResponse:
    usage = Usage(input_tokens=10, output_tokens=20, reasoning_tokens=tokens, cost_micro=5)
    return LLMResponse(text=text, reasoning=reasoning, usage=usage)


# -- settings and hashes ----------------------------------------------------------------------


def test_an_unset_reasoning_setting_leaves_the_hash_form_as_it_was() -> None:
    settings = ExecutionSettings(max_tokens=300, temperature=0.2)
    old_form = settings.model_dump(mode="json")
    del old_form["reasoning"], old_form["reasoning_budget_tokens"]
    assert settings.hash_form() == old_form
    given = ExecutionSettings(max_tokens=300, temperature=0.2, reasoning="off")
    assert given.hash_form() == {**old_form, "reasoning": "off"}


def test_the_request_hash_changes_only_when_reasoning_is_given(
    make_runner: RunnerFactory,
) -> None:
    runner = make_runner(FakeClient())
    plain = runner.prepare(GREET)
    hashes = {plain.request_hash}
    for overrides in (
        Overrides(reasoning="off"),
        Overrides(reasoning="high"),
        Overrides(reasoning_budget_tokens=2048),
    ):
        prepared = runner.prepare(GREET.model_copy(update={"overrides": overrides}))
        hashes.add(prepared.request_hash)
    assert len(hashes) == 4
    # The request hash of a run without reasoning is the one its request hashed to before the
    # settings existed: canonical JSON without the two fields.
    request = LLMRequest(
        target=Target(provider="fake", model="fake-1"),
        messages=(Message(role="user", content="hi"),),
        settings=ExecutionSettings(),
    )
    form = request.hash_form()
    assert "reasoning" not in form["settings"]
    assert "reasoning_budget_tokens" not in form["settings"]
    assert hash_json(form) == hash_json({**form, "settings": request.settings.hash_form()})


def test_profile_then_override_with_sources(make_runner: RunnerFactory) -> None:
    profiles = {
        **PROFILES,
        "offline": {"provider": "fake", "model": "fake-1", "settings": {"reasoning": False}},
    }
    runner = make_runner(FakeClient(), profiles=profiles)
    prepared = runner.prepare(GREET)
    # YAML reads an unquoted `off` as false: it is the level `off`.
    assert prepared.settings.reasoning == "off"
    assert prepared.settings_sources["reasoning"] == "profile"
    overridden = runner.prepare(GREET.model_copy(update={"overrides": Overrides(reasoning="max")}))
    assert overridden.settings.reasoning == "max"
    assert overridden.settings_sources["reasoning"] == "override"
    # The fake provider maps none: nothing is claimed as sent.
    assert overridden.reasoning is None


def test_an_unknown_level_is_refused() -> None:
    with pytest.raises(ValidationError, match="xhigh"):
        RunRequest.model_validate({"prompt_id": "greet", "overrides": {"reasoning": "extreme"}})


def test_anthropic_conflicts_are_refused_with_an_injected_client_too(
    make_runner: RunnerFactory,
) -> None:
    client = FakeClient()
    runner = make_runner(client, env={"ANTHROPIC_API_KEY": "sk-ant-x-canary"})
    request = RunRequest(
        prompt_id="claude/hello",
        overrides=Overrides(
            model="claude-sonnet-4-5", max_tokens=2000, reasoning_budget_tokens=2000
        ),
    )
    with pytest.raises(errors.InvalidRequestError, match="max_tokens"):
        runner.run(request)
    assert client.calls == 0


# -- results ----------------------------------------------------------------------------------


def test_reasoning_is_kept_apart_from_the_output(make_runner: RunnerFactory) -> None:
    result = make_runner(FakeClient([_response(GOOD)])).run(CONTACT)
    assert result.output.text == GOOD
    assert result.output.sha256 == hash_text(GOOD)
    assert result.output.reasoning == THOUGHT
    assert result.validation.valid
    assert result.validation.value == json.loads(GOOD)
    assert result.attempts[0].reasoning == THOUGHT
    assert result.usage.reasoning_tokens == 7


def test_reasoning_tokens_are_summed_over_attempts(make_runner: RunnerFactory) -> None:
    client = FakeClient([_response('{"name": "Ada"}', tokens=7), _response(GOOD, None, tokens=4)])
    result = make_runner(client, repairer=DefaultOutputRepairer(client)).run(CONTACT)
    assert result.validation.repaired
    assert [a.usage.reasoning_tokens for a in result.attempts] == [7, 4]
    assert result.usage.reasoning_tokens == 11
    assert [a.reasoning for a in result.attempts] == [THOUGHT, None]
    assert result.output.reasoning is None  # the last generation's, which gave none


def test_usage_adds_reasoning_tokens() -> None:
    total = Usage(output_tokens=5, reasoning_tokens=3) + Usage(output_tokens=9, reasoning_tokens=8)
    assert (total.output_tokens, total.reasoning_tokens) == (14, 11)
    assert "reasoning_tokens" not in Usage(output_tokens=1).model_dump()


# -- streams ----------------------------------------------------------------------------------


def test_reasoning_deltas_come_first_and_never_reach_text_or_partials(
    make_runner: RunnerFactory,
) -> None:
    runner = make_runner(FakeClient([_response(GOOD)], chunks=3))
    with runner.stream(CONTACT) as stream:
        events = list(stream)
    thoughts = [e for e in events if isinstance(e, ReasoningDelta)]
    assert len(thoughts) == 3
    assert all(e.attempt == 1 for e in thoughts)
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    assert all(events.index(e) < first_text for e in thoughts)
    assert "".join(e.text for e in thoughts) == THOUGHT
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == GOOD
    partials = [e.value for e in events if isinstance(e, PartialValue)]
    assert {"name": "not this one"} not in partials
    done = events[-1]
    assert isinstance(done, Done)
    assert done.result.output.reasoning == THOUGHT
    assert done.result == make_runner(FakeClient([_response(GOOD)])).run(CONTACT)


def test_the_async_stream_has_the_same_events(make_runner: RunnerFactory) -> None:
    async def events() -> list[StreamEvent]:
        runner = make_runner(FakeClient([_response(GOOD)], chunks=3))
        return [e async for e in runner.astream(CONTACT)]

    got = asyncio.run(events())
    assert "".join(e.text for e in got if isinstance(e, ReasoningDelta)) == THOUGHT


def test_a_client_that_cannot_stream_hands_out_its_reasoning_first(
    make_runner: RunnerFactory,
) -> None:
    class Plain:
        def generate(self, request: LLMRequest) -> LLMResponse:
            return _response("Hello!")

    events = list(make_runner(Plain()).stream(GREET))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["AttemptStarted", "ReasoningDelta", "TextDelta", "Done"]


def test_a_stream_without_a_response_joins_its_reasoning_chunks(
    make_runner: RunnerFactory,
) -> None:
    class Chunks:
        def generate(self, request: LLMRequest) -> LLMResponse:
            raise AssertionError("streamed")

        def stream(self, request: LLMRequest) -> Iterator[str]:
            yield ReasoningChunk("Think")
            yield ReasoningChunk("ing.")
            yield "Hello!"

    result = make_runner(Chunks()).stream(GREET).result()
    assert (result.output.text, result.output.reasoning) == ("Hello!", "Thinking.")


def test_response_pieces_put_reasoning_first() -> None:
    pieces = response_pieces(LLMResponse(text="abcd", reasoning="xy"), 2)
    assert pieces == ["x", "y", "ab", "cd"]
    assert [isinstance(p, ReasoningChunk) for p in pieces] == [True, True, False, False]


def test_the_event_is_public_and_reads_back() -> None:
    assert "ReasoningDelta" in scriptorium.__all__
    assert scriptorium.ReasoningDelta is ReasoningDelta
    event = ReasoningDelta(text="hm", attempt=1)
    adapter: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)
    assert adapter.validate_json(event.model_dump_json()) == event
    assert json.loads(event.model_dump_json())["type"] == "reasoning_delta"
