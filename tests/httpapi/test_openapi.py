"""The OpenAPI document: valid OpenAPI 3.1, every route with its body, answer and error forms,
built from the models the routes use."""

from __future__ import annotations

from typing import Any

import pytest
from openapi_spec_validator import validate

from scriptorium.httpapi.openapi import ERROR_STATUSES, build_openapi

ROUTES = {
    ("/v1/runs", "post"),
    ("/v1/prepare", "post"),
    ("/v1/prompts", "get"),
    ("/v1/prompts/{id}", "get"),
    ("/v1/profiles", "get"),
    ("/healthz", "get"),
    ("/openapi.json", "get"),
}


@pytest.mark.parametrize("secured", [True, False])
def test_the_document_is_valid_openapi_3_1(secured: bool) -> None:
    document = build_openapi(secured=secured)
    assert document["openapi"] == "3.1.0"
    validate(document)


def test_every_route_is_described() -> None:
    paths = build_openapi(secured=True)["paths"]
    assert {(path, method) for path, item in paths.items() for method in item} == ROUTES


def _schema_ref(answer: dict[str, Any]) -> str:
    ref: str = answer["content"]["application/json"]["schema"]["$ref"]
    return ref.rsplit("/", 1)[-1]


def test_bodies_and_answers_are_the_library_models() -> None:
    document = build_openapi(secured=True)
    runs = document["paths"]["/v1/runs"]["post"]
    assert runs["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/RunRequest"
    )
    assert _schema_ref(runs["responses"]["200"]) == "RunResult"
    prepare = document["paths"]["/v1/prepare"]["post"]
    assert _schema_ref(prepare["responses"]["200"]) == "PreparedRun"
    schemas = document["components"]["schemas"]
    assert schemas["RunRequest"]["additionalProperties"] is False
    assert "pattern" in schemas["RunRequest"]["properties"]["prompt_id"]
    forms = [set(form["required"]) for form in schemas["ArtifactContent"]["oneOf"]]
    assert forms == [{"text"}, {"base64"}]


def test_every_error_status_of_the_table_is_documented_with_the_error_body() -> None:
    runs = build_openapi(secured=True)["paths"]["/v1/runs"]["post"]["responses"]
    assert set(ERROR_STATUSES) <= {int(status) for status in runs}
    for status in ERROR_STATUSES:
        if status != 422:
            assert _schema_ref(runs[str(status)]) == "ErrorBody"
    assert "Retry-After" in runs["503"]["headers"]
    either = runs["422"]["content"]["application/json"]["schema"]["anyOf"]
    assert {item["$ref"].rsplit("/", 1)[-1] for item in either} == {
        "OutputInvalidBody",
        "ErrorBody",
    }


def test_the_reasoning_settings_and_event_are_described() -> None:
    document = build_openapi(secured=False)
    schemas = document["components"]["schemas"]
    for name in ("reasoning", "reasoning_budget_tokens"):
        assert name in schemas["Overrides"]["properties"]
    levels = schemas["Overrides"]["properties"]["reasoning"]["anyOf"][0]["enum"]
    assert levels == ["off", "low", "medium", "high", "xhigh", "max"]
    assert "reasoning" in schemas["OutputRecord"]["properties"]
    answers = document["paths"]["/v1/runs"]["post"]["responses"]["200"]["description"]
    assert "reasoning" in answers


@pytest.mark.parametrize("client_keys", [False, True])
def test_no_default_is_an_object_or_an_array(client_keys: bool) -> None:
    """Client generators (openapi-python-client) cannot build a structured default and leave the
    operation out: the run and prepare operations must generate."""
    stack: list[object] = [build_openapi(secured=True, client_keys=client_keys)]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            assert not isinstance(item.get("default"), dict | list), item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
