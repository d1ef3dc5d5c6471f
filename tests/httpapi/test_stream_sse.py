"""POST /v1/runs with Accept: text/event-stream: attempt, text, partial and result events; errors
before the first text keep their status, errors after the 200 are error events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from scriptorium.httpapi import create_app
from scriptorium.testing import FakeAnthropicServer
from scriptorium.usecase.model import RunResult
from tests.httpapi.project import call, engine_for, error_of

SSE = {"accept": "text/event-stream"}


def _events(response: httpx.Response) -> list[tuple[str, Any]]:
    """``(event name, parsed data)`` of every server-sent event in the body."""
    found = []
    for block in response.text.split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((fields["event"], json.loads(fields["data"])))
    return found


def test_a_json_run_streams_attempt_text_partial_and_result(project: Path) -> None:
    """The offline JSON prompt: events in order, texts adding up to the result's output, the last
    partial value equal to the validated value."""
    app = create_app(engine_for(project, artifact_root=project / "files"))
    body = {"prompt_id": "extract/contact", "artifacts": {"document": "card.txt"}}
    response = call(app, "POST", "/v1/runs", json=body, headers=SSE)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events = _events(response)
    names = [name for name, _ in events]
    assert names[0] == "attempt"
    assert names[-1] == "result"
    assert {"text", "partial"} <= set(names)
    result = RunResult.model_validate(events[-1][1])
    texts = "".join(data["text"] for name, data in events if name == "text")
    assert texts == result.output.text
    partials = [data["value"] for name, data in events if name == "partial"]
    assert partials[-1] == result.validation.value


def test_failure_before_the_first_text_keeps_its_status(
    project: Path, server: FakeAnthropicServer
) -> None:
    """The provider refusing the key is the usual 502 error answer, not a 200 stream."""
    server.fail(401)
    app = create_app(engine_for(project))
    body = {"prompt_id": "hello", "inputs": {"name": "Ada"}}
    response = call(app, "POST", "/v1/runs", json=body, headers=SSE)
    assert response.status_code == 502
    assert error_of(response)["code"] == "llm_generate"


def test_request_errors_are_plain_error_answers(project: Path) -> None:
    """An unknown prompt is 404 whether or not events were asked for."""
    app = create_app(engine_for(project))
    response = call(app, "POST", "/v1/runs", json={"prompt_id": "nope"}, headers=SSE)
    assert response.status_code == 404
    assert error_of(response)["code"] == "prompt_load"


def test_failure_after_the_first_text_is_an_error_event(
    project: Path, server: FakeAnthropicServer
) -> None:
    """Through the real SDK: text, then the provider's error event, becomes text events and an
    error event on a 200, with no result."""
    server.fail_midstream("Hello, A", chunks=3)
    app = create_app(engine_for(project))
    body = {"prompt_id": "hello", "inputs": {"name": "Ada"}}
    response = call(app, "POST", "/v1/runs", json=body, headers=SSE)
    assert response.status_code == 200
    events = _events(response)
    assert "".join(d["text"] for n, d in events if n == "text") == "Hello, A"
    name, data = events[-1]
    assert name == "error"
    assert data["error"]["code"] == "llm_generate"
    assert data["error"]["reason"] == "overloaded"
    assert "result" not in [n for n, _ in events]


def test_require_valid_adds_an_error_event_after_an_invalid_result(project: Path) -> None:
    """An invalid output: the result event, then an output_invalid error event."""
    app = create_app(engine_for(project))
    response = call(
        app, "POST", "/v1/runs?require_valid=true", json={"prompt_id": "chatty"}, headers=SSE
    )
    assert response.status_code == 200
    events = _events(response)
    assert [n for n, _ in events][-2:] == ["result", "error"]
    assert events[-1][1]["error"]["code"] == "output_invalid"


def test_without_the_accept_header_the_answer_is_json(project: Path) -> None:
    """The plain JSON answer is unchanged."""
    app = create_app(engine_for(project))
    body = {"prompt_id": "greet", "inputs": {"name": "Ada"}}
    response = call(app, "POST", "/v1/runs", json=body)
    assert response.headers["content-type"] == "application/json"
    assert response.json()["output"]["text"] == "Hello!"


def test_lone_surrogates_reach_the_events_as_replacement_characters(
    project: Path, server: FakeAnthropicServer
) -> None:
    """A provider answering ``\\ud800`` in its deltas: every ``text`` event and the result hold
    U+FFFD, and the stream ends with its ``result``, not an ``internal`` error."""
    server.reply("Hello \ud800 and \udfff, Ada.", chunks=3)
    app = create_app(engine_for(project))
    body = {"prompt_id": "hello", "inputs": {"name": "Ada"}}
    response = call(app, "POST", "/v1/runs", json=body, headers=SSE)
    assert response.status_code == 200, response.text
    events = _events(response)
    assert [name for name, _ in events][-1] == "result"
    texts = "".join(data["text"] for name, data in events if name == "text")
    assert texts == "Hello \ufffd and \ufffd, Ada."
    result = RunResult.model_validate(events[-1][1])
    assert result.output.text == texts
    assert [i.keyword for i in result.validation.issues] == ["encoding"]


def test_reasoning_streams_as_reasoning_events_before_the_text(
    project: Path, server: FakeAnthropicServer
) -> None:
    """Through the real SDK: the thinking the model streams is `reasoning` events (before any
    `text`), the overrides carry the setting to the body, and the result keeps the reasoning apart."""
    server.reply("Hello, Ada.", thinking="Greet warmly.", thinking_tokens=4, chunks=2)
    app = create_app(engine_for(project))
    body = {
        "prompt_id": "hello",
        "inputs": {"name": "Ada"},
        "overrides": {"reasoning": "medium"},
    }
    response = call(app, "POST", "/v1/runs", json=body, headers=SSE)
    assert response.status_code == 200, response.text
    events = _events(response)
    names = [name for name, _ in events]
    assert "reasoning" in names
    assert names.index("reasoning") < names.index("text")
    assert all(data["type"] == "reasoning_delta" for name, data in events if name == "reasoning")
    thought = "".join(data["text"] for name, data in events if name == "reasoning")
    result = RunResult.model_validate(events[-1][1])
    assert thought == result.output.reasoning == "Greet warmly."
    assert result.output.text == "Hello, Ada."
    assert result.usage.reasoning_tokens == 4
    sent = server.requests[-1].body
    assert sent["thinking"] == {"type": "adaptive"}
    assert sent["output_config"] == {"effort": "medium"}
