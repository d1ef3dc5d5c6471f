"""Engine.test against a loopback provider (FakeAnthropicServer, through the real SDK): a live
suite priced and judged apart, recorded into a cassette and replayed from it with no key and no
request, and sent through the provider's batch API at the batch rate."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

from scriptorium import Engine
from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium.errors import APIKeyEnvMissingError, InvalidRequestError
from scriptorium.evals import CaseReport, TestReport
from tests.evals.project import GOOD, make_project, verdict, write_tests

KEY_ENV = "EVALS_TEST_KEY"
ENV = {KEY_ENV: "sk-evals-test-key-value"}
MODEL = "claude-haiku-4-5"
PRICING = "pricing: {input: 3.0, output: 15.0}"
# The server's default usage is 10 input and 5 output tokens: 10 * 3 + 5 * 15 micro-USD a call.
CALL_MICRO = 10 * 3 + 5 * 15

TESTS = """
repeat: 3
cases:
  - name: the contact
    artifacts: {document: ../docs/ada.txt}
    expect:
      valid: true
      pointer: {/name: Ada Lovelace}
      max_cost_micro: 1000
      judge: {profile: grader, rubric: The name is a full name.}
"""


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[FakeAnthropicServer, FakeAnthropicServer]]:
    with (
        FakeAnthropicServer(default_text=json.dumps(GOOD)) as model,
        FakeAnthropicServer(default_text=verdict(True, "a full name")) as grader,
    ):
        yield model, grader


@pytest.fixture
def project(
    tmp_path: Path, servers: tuple[FakeAnthropicServer, FakeAnthropicServer]
) -> Iterator[Path]:
    model, grader = servers
    model.clear()
    grader.clear()

    def live(url: str) -> str:
        return (
            f"provider: anthropic\nmodel: {MODEL}\nendpoint: {url}\napi_key_env: {KEY_ENV}\n"
            f"settings: {{max_tokens: 256}}\n{PRICING}\n"
        )

    root = make_project(
        tmp_path / "project",
        live=live(model.url),
        grader=live(grader.url),
        taped=(
            f"provider: replay\nmodel: {MODEL}\nendpoint: {model.url}\napi_key_env: {KEY_ENV}\n"
            "options: {cassette: ../cassettes/contact.jsonl, record_provider: anthropic}\n"
            f"{PRICING}\n"
        ),
    )
    write_tests(root, "contact", TESTS)
    yield root
    model.clear()
    grader.clear()


def _only_case(report: TestReport) -> CaseReport:
    (case,) = report.all_cases()
    return case


def test_a_live_suite_is_priced_and_its_judges_are_priced_apart(
    project: Path, servers: tuple[FakeAnthropicServer, FakeAnthropicServer]
) -> None:
    model, grader = servers
    report = Engine(project, env=ENV).test(profiles=["live"])
    (case,) = report.all_cases()
    assert case.status == "passed", case.outcomes
    assert len(model.requests) == 3
    assert len(grader.requests) == 3
    assert [o.cost_micro for o in case.outcomes] == [CALL_MICRO] * 3
    assert case.cost_micro == report.cost_micro == 3 * CALL_MICRO
    assert case.judge_cost_micro == report.judge_cost_micro == 3 * CALL_MICRO
    assert all(o.judge is not None and o.judge.cost_micro == CALL_MICRO for o in case.outcomes)
    # The judge saw the output it grades and the rubric.
    sent = json.dumps(grader.requests[0].body)
    assert "Ada Lovelace" in sent
    assert "The name is a full name." in sent


def test_a_cost_limit_fails_on_the_priced_run(project: Path) -> None:
    write_tests(
        project,
        "contact",
        """
        cases:
          - name: too dear
            artifacts: {document: ../docs/ada.txt}
            expect: {max_cost_micro: 100}
        """,
    )
    report = Engine(project, env=ENV).test(profiles=["live"])
    (case,) = report.all_cases()
    (failure,) = case.outcomes[0].failures
    assert (failure.expectation, failure.expected, failure.seen) == (
        "max_cost_micro",
        100,
        CALL_MICRO,
    )


def test_record_then_replay_needs_no_key_and_sends_nothing(
    project: Path, servers: tuple[FakeAnthropicServer, FakeAnthropicServer]
) -> None:
    model, _ = servers
    write_tests(
        project,
        "contact",
        """
        cases:
          - name: taped
            artifacts: {document: ../docs/ada.txt}
            expect: {pointer: {/name: Ada Lovelace}}
        """,
    )
    recorded = Engine(project, env=ENV).test(profiles=["taped"], cassettes="record")
    assert recorded.ok
    assert recorded.cassettes == "record"
    assert len(model.requests) == 1
    cassette = project / "cassettes" / "contact.jsonl"
    assert len(cassette.read_text("utf-8").splitlines()) == 1
    assert _only_case(recorded).outcomes[0].cost_micro == CALL_MICRO

    replayed = Engine(project, env={}).test(profiles=["taped"], cassettes="replay")
    assert replayed.ok, replayed.all_cases()[0].outcomes
    assert len(model.requests) == 1  # nothing was sent
    (case,) = replayed.all_cases()
    assert case.cost_micro == 0  # nothing was spent
    assert case.outcomes[0].request_hash == _only_case(recorded).outcomes[0].request_hash


def test_a_replay_miss_is_a_failed_repeat(project: Path) -> None:
    write_tests(project, "contact", "cases: [{name: unseen, artifacts: {document: {text: x}}}]")
    report = Engine(project, env={}).test(profiles=["taped"], cassettes="replay", repeat=1)
    (case,) = report.all_cases()
    assert case.status == "failed"
    error = case.outcomes[0].error
    assert error is not None
    assert (error.code, error.reason) == ("llm_generate", "replay_miss")


def test_record_and_replay_refuse_a_live_profile_without_a_cassette(project: Path) -> None:
    modes: tuple[Literal["record", "replay"], ...] = ("record", "replay")
    for mode in modes:
        # The judge's profile is live too: the first one found is named.
        with pytest.raises(InvalidRequestError, match=f"--{mode}: profile 'grader'.*no cassette"):
            Engine(project, env=ENV).test(profiles=["live"], cassettes=mode)


def test_cases_go_through_a_provider_batch_at_the_batch_rate(
    project: Path, servers: tuple[FakeAnthropicServer, FakeAnthropicServer]
) -> None:
    model, grader = servers
    write_tests(
        project,
        "contact",
        """
        cases:
          - name: one
            artifacts: {document: ../docs/ada.txt}
            expect: {pointer: {/name: Ada Lovelace}, judge: {profile: grader, rubric: Fine.}}
          - name: two
            artifacts: {document: {text: "Ada Lovelace, ada@example.com"}}
            expect: {valid: true}
        """,
    )
    report = Engine(project, env=ENV).test(profiles=["live"], provider_batch=True, poll_s=0.01)
    assert report.ok, [c.outcomes for c in report.all_cases()]
    assert report.provider_batch
    assert len(model.batches.created) == 1
    assert not [r for r in model.requests if r.path == "/v1/messages"]
    # Half price: every token class at half its rate, rounded once.
    batch_micro = (10 * 3 * 500_000 + 5 * 15 * 500_000 + 500_000) // 1_000_000
    assert [o.cost_micro for c in report.all_cases() for o in c.outcomes] == [batch_micro] * 2
    # The judge is an ordinary run.
    assert len(grader.requests) == 1
    assert report.judge_cost_micro == CALL_MICRO


def test_an_unset_key_stops_the_suite_before_any_request(
    project: Path, servers: tuple[FakeAnthropicServer, FakeAnthropicServer]
) -> None:
    model, grader = servers
    with pytest.raises(APIKeyEnvMissingError) as err:
        Engine(project, env={}).test(profiles=["live"])
    assert err.value.env_var == KEY_ENV
    # The judge's profile is checked the same way, even when the cases run offline.
    with pytest.raises(APIKeyEnvMissingError):
        Engine(project, env={}).test(profiles=["good"])
    assert model.requests == []
    assert grader.requests == []
