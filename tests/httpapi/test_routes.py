"""Every route of the HTTP API, in-process, over a project on disk: the answers are the same JSON
the command line prints, listings hide keys and variables, and the OpenAPI document is served."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scriptorium.httpapi import create_app
from scriptorium.testing import FakeAnthropicServer
from tests.httpapi.project import CANARY, MODEL, call, engine_for, error_of


def test_healthz_answers_ok() -> None:
    """GET /healthz is 200 {"status": "ok"} and needs no project at all."""
    app = create_app(engine_for(Path("/nonexistent-project")))
    response = call(app, "GET", "/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_run_answers_the_run_result_json(project: Path) -> None:
    """POST /v1/runs answers 200 with the RunResult, parsed back by the library's own model."""
    from scriptorium.usecase.model import RunResult

    app = create_app(engine_for(project))
    response = call(app, "POST", "/v1/runs", json={"prompt_id": "greet", "inputs": {"name": "Ada"}})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    result = RunResult.model_validate_json(response.content)
    assert result.output.text == "Hello!"
    assert result.prepared.prompt_id == "greet"
    assert result.validation.valid


def test_run_json_is_the_json_of_run_minus_json(project: Path) -> None:
    """The body is exactly ``RunResult.model_dump_json(by_alias=True)``: the same keys, in the same
    order, as ``scriptorium run --json`` prints (only ids and times differ between runs)."""
    engine = engine_for(project)
    app = create_app(engine)
    response = call(app, "POST", "/v1/runs", json={"prompt_id": "greet", "inputs": {"name": "Ada"}})
    library = json.loads(engine.run("greet", inputs={"name": "Ada"}).model_dump_json(by_alias=True))
    served = response.json()
    for volatile in ("run_id", "started_at", "finished_at", "duration_ms"):
        served.pop(volatile)
        library.pop(volatile)
    for attempt in served["attempts"] + library["attempts"]:
        attempt.pop("latency_ms")
    for result in (served, library):
        result["metadata"].pop("turn")  # the fake provider numbers the answers it gives
    assert list(served) == list(library)
    assert served == library


def test_an_invalid_output_is_still_a_200(project: Path) -> None:
    """A run whose output fails its contract is a result (validation.valid false), not an error."""
    app = create_app(engine_for(project))
    response = call(app, "POST", "/v1/runs", json={"prompt_id": "chatty"})
    assert response.status_code == 200
    assert response.json()["validation"]["valid"] is False


def test_require_valid_turns_an_invalid_output_into_422_holding_the_result(project: Path) -> None:
    """?require_valid=true: 422 output_invalid, with the issues and the whole result."""
    app = create_app(engine_for(project))
    response = call(app, "POST", "/v1/runs?require_valid=true", json={"prompt_id": "chatty"})
    assert response.status_code == 422
    error = error_of(response)
    assert error["code"] == "output_invalid"
    assert error["issues"]
    result = response.json()["result"]
    assert result["validation"]["valid"] is False
    assert result["output"]["text"] == "no JSON here"


def test_require_valid_lets_a_valid_output_through(project: Path) -> None:
    app = create_app(engine_for(project))
    response = call(
        app,
        "POST",
        "/v1/runs?require_valid=true",
        json={"prompt_id": "greet", "inputs": {"name": "A"}},
    )
    assert response.status_code == 200
    assert response.json()["validation"]["valid"] is True


def test_require_valid_that_is_not_a_boolean_is_400(project: Path) -> None:
    app = create_app(engine_for(project))
    response = call(app, "POST", "/v1/runs?require_valid=maybe", json={"prompt_id": "greet"})
    assert response.status_code == 400
    assert error_of(response)["field"] == "require_valid"


def test_prepare_answers_the_prepared_run_and_calls_no_model(
    project: Path, server: FakeAnthropicServer
) -> None:
    """POST /v1/prepare is the PreparedRun JSON of ``prepare --json``; nothing reaches the server."""
    engine = engine_for(project)
    app = create_app(engine)
    body = {"prompt_id": "hello", "inputs": {"name": "Ada"}}
    response = call(app, "POST", "/v1/prepare", json=body)
    assert response.status_code == 200, response.text
    assert response.text == engine.prepare("hello", inputs={"name": "Ada"}).model_dump_json(
        by_alias=True
    )
    assert response.json()["target"]["model"] == MODEL
    assert server.requests == []


def test_prompts_lists_every_prompt_with_its_summary(project: Path) -> None:
    """GET /v1/prompts: id, description, version, profile, output_format; a broken file is listed
    with its error instead of failing the listing."""
    app = create_app(engine_for(project))
    response = call(app, "GET", "/v1/prompts")
    assert response.status_code == 200
    prompts = {p["id"]: p for p in response.json()["prompts"]}
    assert prompts["greet"] == {
        "id": "greet",
        "description": "Greets someone",
        "version": 3,
        "profile": "offline",
        "output_format": "text",
    }
    assert prompts["extract/contact"]["output_format"] == "json_schema"
    assert prompts["broken"]["error"]["code"] == "prompt_load"


def test_prompt_detail_exposes_the_inputs_schema_and_the_loaded_output_schema(
    project: Path,
) -> None:
    """GET /v1/prompts/{id} (slashes allowed): the inputs JSON Schema, the artifacts, the output
    format with the schema file's document, and the definition hash a run reports."""
    engine = engine_for(project)
    app = create_app(engine)
    greet = call(app, "GET", "/v1/prompts/greet").json()
    assert greet["inputs"]["required"] == ["name"]
    assert greet["inputs"]["properties"]["name"] == {"type": "string", "minLength": 1}
    assert greet["definition_hash"] == engine.prepare("greet", inputs={"name": "A"}).definition_hash

    response = call(app, "GET", "/v1/prompts/extract/contact")
    assert response.status_code == 200
    contact = response.json()
    assert contact["id"] == "extract/contact"
    assert contact["artifacts"]["document"]["max_bytes"] == 64
    assert contact["output"]["format"] == "json_schema"
    assert contact["output"]["schema"]["required"] == ["name", "email"]


def test_profiles_lists_provider_and_model_but_no_key_or_variable(project: Path) -> None:
    """GET /v1/profiles: name, provider, model; never the key, the variable or the endpoint."""
    app = create_app(engine_for(project))
    response = call(app, "GET", "/v1/profiles")
    assert response.status_code == 200
    profiles = {p["name"]: p for p in response.json()["profiles"]}
    assert profiles["claude"] == {"name": "claude", "provider": "anthropic", "model": MODEL}
    assert "SCRIPTORIUM_HTTP_TEST_KEY" not in response.text
    assert "127.0.0.1" not in response.text
    assert profiles["broken"]["error"]["code"] == "profile_load"


def test_a_run_through_the_real_sdk_against_the_loopback_server(
    project: Path, server: FakeAnthropicServer
) -> None:
    """An anthropic profile runs through the SDK with the server's key, which no answer shows."""
    server.reply("Hello, Ada!", usage={"input_tokens": 12, "output_tokens": 4})
    app = create_app(engine_for(project))
    response = call(app, "POST", "/v1/runs", json={"prompt_id": "hello", "inputs": {"name": "Ada"}})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["output"]["text"] == "Hello, Ada!"
    assert body["usage"]["input_tokens"] == 12
    sent = server.requests[-1].headers
    assert CANARY in sent.get("x-api-key", "") + sent.get("authorization", "")


def test_openapi_document_is_served(project: Path) -> None:
    app = create_app(engine_for(project))
    response = call(app, "GET", "/openapi.json")
    assert response.status_code == 200
    assert response.json()["openapi"].startswith("3.1")


@pytest.mark.parametrize(
    ("method", "url"), [("GET", "/v1/nothing-here"), ("GET", "/"), ("POST", "/v1/profiles")]
)
def test_unknown_routes_and_methods_have_the_error_body(
    project: Path, method: str, url: str
) -> None:
    app = create_app(engine_for(project))
    response = call(app, method, url)
    assert response.status_code in (404, 405)
    assert error_of(response)["code"] in ("not_found", "method_not_allowed")
