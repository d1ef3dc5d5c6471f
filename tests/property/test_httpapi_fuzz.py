"""The HTTP API fuzzed from its own OpenAPI document (schemathesis): whatever a client sends,
the answer is one the document describes (status, content type, headers, body schema), and no
500 is anything but the configuration errors the status table names."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from scriptorium.engine import Engine
from scriptorium.httpapi import create_app
from scriptorium.httpapi.errors import CONFIGURATION_CODES

REPO = Path(__file__).resolve().parents[2]
OPERATIONS = [
    ("/v1/runs", "POST"),
    ("/v1/prepare", "POST"),
    ("/v1/prompts", "GET"),
    ("/v1/prompts/{id}", "GET"),
    ("/v1/profiles", "GET"),
    ("/healthz", "GET"),
    ("/openapi.json", "GET"),
]
CHECKS = [
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@cache
def _schema() -> Any:
    # The bundled example project, served in-process with artifacts by value only and no key
    # variables set (an anthropic profile then fails as configuration, which is allowed).
    app = create_app(Engine(REPO, env={}))
    return schemathesis.openapi.from_asgi("/openapi.json", app)


def _no_unexplained_500(response: Any) -> None:
    if response.status_code != 500:
        return
    error = response.json()["error"]
    if error["code"] == "llm_generate":
        assert error["reason"] in ("config", "provider_unavailable"), response.text
    else:
        assert error["code"] in CONFIGURATION_CODES, response.text


@pytest.mark.parametrize(("path", "method"), OPERATIONS)
def test_every_answer_is_one_the_document_describes(path: str, method: str) -> None:
    operation = _schema()[path][method]

    @settings(
        max_examples=15,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(case=operation.as_strategy())
    def check(case: Any) -> None:
        response = case.call()
        case.validate_response(response, checks=CHECKS)
        _no_unexplained_500(response)

    check()
