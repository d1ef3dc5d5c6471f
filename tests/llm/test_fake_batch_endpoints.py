"""The fake servers' batch endpoints refuse what the real APIs refuse, through the real SDKs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium._testing.openai_server import FakeOpenAIServer

PARAMS = {
    "model": "claude-haiku-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}


@pytest.fixture(scope="module")
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture(scope="module")
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def claude(anthropic_server: FakeAnthropicServer) -> Iterator[Any]:
    anthropic_server.clear()
    client = anthropic.Anthropic(api_key="k", base_url=anthropic_server.url, max_retries=0)
    yield client
    client.close()


@pytest.fixture
def gpt(openai_server: FakeOpenAIServer) -> Iterator[Any]:
    openai_server.clear()
    client = openai.OpenAI(api_key="k", base_url=openai_server.url, max_retries=0)
    yield client
    client.close()


def test_a_message_batch_runs_for_the_scripted_polls_then_ends_with_every_row(
    anthropic_server: FakeAnthropicServer, claude: Any
) -> None:
    anthropic_server.batches.polls_before_end = 2
    anthropic_server.batches.expire_rows(lambda custom_id, body: custom_id == "late")
    requests = [{"custom_id": c, "params": PARAMS} for c in ("a", "late")]
    batch = claude.messages.batches.create(requests=requests)
    assert claude.messages.batches.retrieve(batch.id).processing_status == "in_progress"
    assert claude.messages.batches.retrieve(batch.id).processing_status == "in_progress"
    ended = claude.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended"
    assert ended.request_counts.succeeded == 1
    assert ended.request_counts.expired == 1
    kinds = {r.custom_id: r.result.type for r in claude.messages.batches.results(batch.id)}
    assert kinds == {"a": "succeeded", "late": "expired"}
    assert [b.id for b in claude.messages.batches.list(limit=5)] == [batch.id]


def test_a_message_batch_refuses_repeated_or_overlong_custom_ids(claude: Any) -> None:
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.batches.create(
            requests=[{"custom_id": "a", "params": PARAMS}, {"custom_id": "a", "params": PARAMS}]
        )
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.batches.create(requests=[{"custom_id": "x" * 65, "params": PARAMS}])


def test_results_of_a_running_message_batch_are_not_there_yet(
    anthropic_server: FakeAnthropicServer, claude: Any
) -> None:
    anthropic_server.batches.polls_before_end = 5
    batch = claude.messages.batches.create(requests=[{"custom_id": "a", "params": PARAMS}])
    with pytest.raises(anthropic.AnthropicError):
        claude.messages.batches.results(batch.id)
    canceled = claude.messages.batches.cancel(batch.id)
    assert canceled.processing_status == "canceling"
    assert claude.messages.batches.retrieve(batch.id).request_counts.canceled == 1


def _upload(gpt: Any, models: list[str]) -> Any:
    lines = [
        json.dumps(
            {
                "custom_id": f"row-{n}",
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {"model": model, "messages": [{"role": "user", "content": "hi"}]},
            }
        )
        for n, model in enumerate(models)
    ]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    return gpt.files.create(file=("rows.jsonl", data), purpose="batch")


def test_an_openai_batch_writes_an_output_file_and_an_error_file(
    openai_server: FakeOpenAIServer, gpt: Any
) -> None:
    openai_server.batches.error_rows(lambda custom_id, body: custom_id == "row-1", status=400)
    openai_server.batches.expire_rows(lambda custom_id, body: custom_id == "row-2")
    uploaded = _upload(gpt, ["gpt-4o-mini"] * 3)
    batch = gpt.batches.create(
        input_file_id=uploaded.id,
        endpoint="/v1/chat/completions",
        completion_window="24h",
        metadata={"tag": "t"},
    )
    assert gpt.batches.retrieve(batch.id).status == "in_progress"
    ended = gpt.batches.retrieve(batch.id)
    assert ended.status == "expired"
    assert ended.metadata == {"tag": "t"}
    output = [json.loads(x) for x in gpt.files.content(ended.output_file_id).text.splitlines()]
    errors = [json.loads(x) for x in gpt.files.content(ended.error_file_id).text.splitlines()]
    statuses = {o["custom_id"]: o["response"]["status_code"] for o in output}
    assert statuses == {"row-0": 200, "row-1": 400}
    assert [(e["custom_id"], e["error"]["code"]) for e in errors] == [("row-2", "batch_expired")]


def test_an_openai_batch_holds_one_model(gpt: Any) -> None:
    uploaded = _upload(gpt, ["gpt-4o-mini", "gpt-4o"])
    with pytest.raises(openai.BadRequestError):
        gpt.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
