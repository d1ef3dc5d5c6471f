"""Every row of the HTTP status table, each provoked for real: broken files on disk, a key
variable that is not set, the real Anthropic SDK against a loopback server that refuses, throttles
or hangs. Every error body has code, message, request_id and retryable, and never the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scriptorium.engine import Engine
from scriptorium.httpapi import create_app
from scriptorium.testing import FakeAnthropicServer
from tests.httpapi.project import call, engine_for, error_of


def _post(project: Path, body: Any, url: str = "/v1/runs", **app_options: Any) -> Any:
    app = create_app(engine_for(project), **app_options)
    return call(app, "POST", url, json=body)


# -- 400 --------------------------------------------------------------------------------------


def test_inputs_failing_the_schema_are_400_invalid_request(project: Path) -> None:
    response = _post(project, {"prompt_id": "greet", "inputs": {"name": ""}})
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_request"


def test_a_malformed_prompt_id_is_400(project: Path) -> None:
    response = _post(project, {"prompt_id": "../etc/passwd"})
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_request"


def test_no_profile_anywhere_is_400_profile_required(project: Path) -> None:
    response = _post(project, {"prompt_id": "unprofiled"})
    assert response.status_code == 400
    assert error_of(response)["code"] == "profile_required"


def test_a_missing_required_artifact_is_400(project: Path) -> None:
    response = _post(project, {"prompt_id": "extract/contact"})
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_request"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"this is not JSON", None),
        (b"[1, 2, 3]", None),
        (b'{"prompt_id": "greet", "surprise": 1}', "surprise"),
        (b'{"inputs": {}}', "prompt_id"),
        (b'{"prompt_id": "greet", "overrides": {"max_tokens": -1}}', "overrides.max_tokens"),
        (b"", None),
    ],
)
def test_a_body_that_is_not_a_run_request_is_400(
    project: Path, body: bytes, field: str | None
) -> None:
    """Not JSON, not an object, unknown or missing fields, values out of range: 400, naming the
    field when there is one."""
    app = create_app(engine_for(project))
    for url in ("/v1/runs", "/v1/prepare"):
        response = call(app, "POST", url, content=body)
        assert response.status_code == 400, response.text
        error = error_of(response)
        assert error["code"] == "invalid_request"
        if field is not None:
            assert error["field"] == field


def test_a_body_api_key_is_refused_unless_client_keys_are_allowed(
    project: Path, server: FakeAnthropicServer
) -> None:
    """400 naming the field, and the key sent is not echoed back; with allow_client_keys the
    request's key is the one the provider sees."""
    client_key = "sk-ant-client-key-5a5a5a5a"
    body = {"prompt_id": "hello", "inputs": {"name": "Ada"}, "api_key": client_key}
    refused = _post(project, body)
    assert refused.status_code == 400
    assert error_of(refused)["field"] == "api_key"
    assert client_key not in refused.text
    assert server.requests == []

    allowed = _post(project, body, allow_client_keys=True)
    assert allowed.status_code == 200, allowed.text
    sent = server.requests[-1].headers
    assert client_key in sent.get("x-api-key", "") + sent.get("authorization", "")
    assert client_key not in allowed.text


def test_an_endpoint_override_needs_the_requests_own_key(
    project: Path, server: FakeAnthropicServer
) -> None:
    """The server's key is never sent to an endpoint the request names: 400 before any call."""
    body = {
        "prompt_id": "hello",
        "inputs": {"name": "Ada"},
        "overrides": {"endpoint": "http://127.0.0.1:9/elsewhere"},
    }
    response = _post(project, body, allow_client_keys=True)
    assert response.status_code == 400
    assert error_of(response)["field"] == "overrides.endpoint"
    assert server.requests == []


def test_a_string_artifact_reference_is_400_without_an_artifact_root(project: Path) -> None:
    body = {"prompt_id": "extract/contact", "artifacts": {"document": "files/card.txt"}}
    response = _post(project, body)
    assert response.status_code == 400
    assert error_of(response)["field"] == "artifacts.document"


def test_a_string_artifact_reference_is_read_under_the_artifact_root(project: Path) -> None:
    engine = Engine(project, artifact_root=project / "files")
    app = create_app(engine)
    body = {"prompt_id": "extract/contact", "artifacts": {"document": "card.txt"}}
    response = call(app, "POST", "/v1/runs", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["validation"]["value"] == {"name": "Ada", "email": "ada@example.com"}
    outside = {"prompt_id": "extract/contact", "artifacts": {"document": "../profiles/claude.yaml"}}
    refused = call(app, "POST", "/v1/runs", json=outside)
    assert refused.status_code == 400
    assert error_of(refused)["code"] == "artifact_load"


# -- 404 --------------------------------------------------------------------------------------


def test_a_prompt_that_does_not_exist_is_404(project: Path) -> None:
    app = create_app(engine_for(project))
    for response in (
        call(app, "POST", "/v1/runs", json={"prompt_id": "nowhere"}),
        call(app, "POST", "/v1/prepare", json={"prompt_id": "nowhere"}),
        call(app, "GET", "/v1/prompts/nowhere"),
    ):
        assert response.status_code == 404
        error = error_of(response)
        assert (error["code"], error["reason"]) == ("prompt_load", "not_found")


def test_a_profile_that_does_not_exist_is_404(project: Path) -> None:
    response = _post(project, {"prompt_id": "greet", "inputs": {"name": "A"}, "profile": "nope"})
    assert response.status_code == 404
    error = error_of(response)
    assert (error["code"], error["reason"]) == ("profile_load", "not_found")
    assert "path" not in error or not error["path"].startswith("/")


# -- 413 --------------------------------------------------------------------------------------


def test_a_body_over_the_limit_is_413(project: Path) -> None:
    body = {"prompt_id": "greet", "inputs": {"name": "x" * 500}}
    response = _post(project, body, max_body_bytes=200)
    assert response.status_code == 413
    assert error_of(response)["code"] == "payload_too_large"


def test_a_streamed_body_over_the_limit_is_413_without_a_content_length(project: Path) -> None:
    """A chunked body announces no size: it is counted as it arrives and refused at the limit."""
    app = create_app(engine_for(project), max_body_bytes=100)

    async def chunks() -> Any:
        for _ in range(50):
            yield b'{"prompt_id": "greet"       '

    response = call(app, "POST", "/v1/runs", content=chunks())
    assert response.status_code == 413


def test_an_artifact_over_its_size_limit_is_413(project: Path) -> None:
    engine = Engine(project, artifact_root=project / "files")
    response = call(
        create_app(engine),
        "POST",
        "/v1/runs",
        json={"prompt_id": "extract/contact", "artifacts": {"document": "long.txt"}},
    )
    assert response.status_code == 413
    error = error_of(response)
    assert (error["code"], error["reason"]) == ("artifact_load", "too_large")


# -- 422 --------------------------------------------------------------------------------------


def test_a_template_that_fails_to_render_is_422(project: Path) -> None:
    response = _post(project, {"prompt_id": "undefined"})
    assert response.status_code == 422
    assert error_of(response)["code"] == "prompt_render"


# -- 500: the server's configuration ---------------------------------------------------------


def test_a_broken_prompt_file_is_500_prompt_load(project: Path) -> None:
    response = _post(project, {"prompt_id": "broken"})
    assert response.status_code == 500
    error = error_of(response)
    assert error["code"] == "prompt_load"
    assert error.get("reason") != "not_found"


def test_a_broken_profile_file_is_500_profile_load(project: Path) -> None:
    response = _post(project, {"prompt_id": "greet", "inputs": {"name": "A"}, "profile": "broken"})
    assert response.status_code == 500
    assert error_of(response)["code"] == "profile_load"


def test_an_output_schema_that_does_not_load_is_500_validation(project: Path) -> None:
    response = _post(project, {"prompt_id": "no-schema"})
    assert response.status_code == 500
    assert error_of(response)["code"] == "validation"


def test_an_unset_key_variable_is_500_naming_the_variable(project: Path) -> None:
    body = {"prompt_id": "hello", "inputs": {"name": "A"}, "profile": "nokey"}
    response = _post(project, body)
    assert response.status_code == 500
    error = error_of(response)
    assert error["code"] == "api_key_env_missing"
    assert error["env_var"] == "SCRIPTORIUM_HTTP_TEST_UNSET_KEY"


def test_a_provider_that_needs_a_key_and_has_none_is_500(project: Path) -> None:
    body = {"prompt_id": "hello", "inputs": {"name": "A"}, "profile": "keyless"}
    response = _post(project, body)
    assert response.status_code == 500
    assert error_of(response)["code"] == "api_key_required"


def test_a_misconfigured_provider_is_500_llm_generate_config(project: Path) -> None:
    body = {"prompt_id": "greet", "inputs": {"name": "A"}, "profile": "tapeless"}
    response = _post(project, body)
    assert response.status_code == 500
    error = error_of(response)
    assert (error["code"], error["reason"]) == ("llm_generate", "config")


class _BuggyEngine(Engine):
    """An Engine with a bug: its run raises something no sentinel covers."""

    async def arun(self, request: Any, /, **fields: Any) -> Any:
        raise RuntimeError("internal detail sk-ant-should-not-leak")


def test_any_other_exception_is_500_internal_without_details(project: Path) -> None:
    app = create_app(_BuggyEngine(project))
    response = call(app, "POST", "/v1/runs", json={"prompt_id": "greet"})
    assert response.status_code == 500
    error = error_of(response)
    assert error["code"] == "internal"
    assert "should-not-leak" not in response.text
    assert "RuntimeError" in error["message"]


# -- 502 / 503 / 504: the provider -----------------------------------------------------------


def _hello(**overrides: Any) -> dict[str, Any]:
    return {"prompt_id": "hello", "inputs": {"name": "Ada"}, "overrides": overrides}


def test_the_provider_refusing_the_key_is_502_auth(
    project: Path, server: FakeAnthropicServer
) -> None:
    server.fail(401, message="invalid x-api-key")
    response = _post(project, _hello())
    assert response.status_code == 502
    error = error_of(response)
    assert (error["code"], error["reason"], error["http_status"]) == ("llm_generate", "auth", 401)
    assert error["retryable"] is False


def test_a_provider_server_error_is_502(project: Path, server: FakeAnthropicServer) -> None:
    server.fail(500)
    response = _post(project, _hello(max_retries=0))
    assert response.status_code == 502
    assert error_of(response)["reason"] == "server_error"


def test_a_long_retry_after_is_503_with_retry_after(
    project: Path, server: FakeAnthropicServer
) -> None:
    """A 429 asking for two minutes is not waited out: 503, Retry-After 120, retryable."""
    server.fail(429, headers={"retry-after": "120"})
    response = _post(project, _hello(max_retries=2))
    assert response.status_code == 503
    assert response.headers["retry-after"] == "120"
    error = error_of(response)
    assert error["reason"] == "rate_limited"
    assert error["retryable"] is True
    assert error["retry_after_s"] == 120
    assert len(server.requests) == 1


def test_an_overloaded_provider_is_503_with_retry_after(
    project: Path, server: FakeAnthropicServer
) -> None:
    server.fail(529)
    response = _post(project, _hello(max_retries=0))
    assert response.status_code == 503
    assert int(response.headers["retry-after"]) >= 1
    assert error_of(response)["reason"] == "overloaded"


def test_a_hanging_provider_with_a_short_budget_is_504(
    project: Path, server: FakeAnthropicServer
) -> None:
    server.delay(5.0)
    response = _post(project, _hello(timeout_s=0.3, max_retries=0))
    assert response.status_code == 504
    error = error_of(response)
    assert (error["code"], error["reason"]) == ("llm_generate", "timeout")


def test_no_error_message_names_the_servers_directory(project: Path) -> None:
    """Whatever the sentinel's message says about where files are, the caller sees '.'."""
    app = create_app(engine_for(project))
    for body in (
        {"prompt_id": "nowhere"},
        {"prompt_id": "greet", "inputs": {"name": "A"}, "profile": "nope"},
        {"prompt_id": "greet", "inputs": {"name": "A"}, "profile": "broken"},
        {"prompt_id": "broken"},
        {"prompt_id": "no-schema"},
    ):
        response = call(app, "POST", "/v1/runs", json=body)
        assert str(project) not in response.text
        assert str(project.resolve()) not in response.text
    for url in ("/v1/prompts", "/v1/profiles", "/v1/prompts/broken"):
        assert str(project.resolve()) not in call(app, "GET", url).text
