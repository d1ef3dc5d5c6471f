"""The kernel with ``CC_LLM_PROVIDER=openai``: the real SDK in a real subprocess, against the
loopback ``FakeOpenAIServer`` (the kernel chooses any keyed provider of the registry, reading its
key and base URL from the variables its spec names).

The two kernels of this module are started together once (a module fixture), as for Anthropic.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from scriptorium.llm.model import Usage
from scriptorium.llm.pricing import cost_micro
from scriptorium.testing import FakeOpenAIServer
from tests.e2e.test_kernel import Finished, init_line, kernel_env, run_kernel

KEY = "sk-openai-kernel-test-9f8e7d6c5b"
RAW = {"model": "gpt-4o-mini", "system": "Be brief.", "user": "Summarize the plan."}


@dataclass(frozen=True)
class Transcripts:
    rejected: Finished
    raw: Finished
    raw_server: FakeOpenAIServer


@pytest.fixture(scope="module")
def transcripts() -> Iterator[Transcripts]:
    """A 401 and a raw success, each against its own loopback server."""
    with FakeOpenAIServer() as rejecting, FakeOpenAIServer() as raw_server:
        rejecting.fail(401, code="invalid_api_key", message="bad key")
        raw_server.reply("Approve the budget.", prompt_tokens=12, completion_tokens=3)

        def one(url: str) -> Finished:
            env = kernel_env(CC_LLM_PROVIDER="openai", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=url)
            return run_kernel(env, init_line(RAW))

        with ThreadPoolExecutor(max_workers=2) as pool:
            rejected, raw = pool.map(one, [rejecting.url, raw_server.url])
        yield Transcripts(rejected, raw, raw_server)


def test_a_raw_success_through_openai_charges_the_usage_the_server_reported(
    transcripts: Transcripts,
) -> None:
    """The payload goes to the OPENAI_BASE_URL server with the OPENAI_API_KEY key; tokens and
    cost are charged from the response."""
    done = transcripts.raw
    assert done.returncode == 0, done.stderr
    cost, _ = cost_micro(RAW["model"], Usage(input_tokens=12, output_tokens=3))
    assert [m for m in done.messages if m["op"] == "charge"] == [
        {"op": "charge", "dim": "tokens", "amount": 15},
        {"op": "charge", "dim": "cost_micro", "amount": cost},
    ]
    assert done.messages[-1] == {
        "op": "exit",
        "exit_kind": "completed",
        "summary": "Approve the budget.",
    }
    (request,) = transcripts.raw_server.requests
    assert request.body["model"] == RAW["model"]
    assert request.body["messages"] == [
        {"role": "system", "content": RAW["system"]},
        {"role": "user", "content": RAW["user"]},
    ]
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_a_401_from_openai_is_a_failed_exit_without_the_key(transcripts: Transcripts) -> None:
    """A refused key: exit_kind failed with the auth reason, no charge, the key nowhere."""
    done = transcripts.rejected
    assert done.returncode == 1, done.stderr
    exit_line = done.messages[-1]
    assert exit_line["exit_kind"] == "failed"
    assert exit_line["error"]["reason"] == "auth"
    assert not [m for m in done.messages if m["op"] == "charge"]
    for finished in (transcripts.rejected, transcripts.raw):
        assert KEY not in json.dumps(finished.messages)
        assert KEY not in finished.stderr
