"""The OpenAPI document tells the truth about the server it describes: what this server refuses of
a RunRequest is shown as refused (its own api_key without allow_client_keys, an endpoint override
without such a key, string artifact references without an artifact root), and the prompt id path
parameter carries the pattern ids are checked against. Each claim is checked against the server."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from openapi_spec_validator import validate

from scriptorium.httpapi import create_app
from scriptorium.httpapi.openapi import build_openapi
from scriptorium.promptdef.model import PROMPT_ID_PATTERN
from tests.httpapi.project import call, engine_for


def _request_schema(document: dict[str, Any]) -> dict[str, Any]:
    """The RunRequest schema, with the document's components resolvable."""
    schemas = document["components"]["schemas"]
    return {**schemas["RunRequest"], "components": {"schemas": schemas}}


def _accepts(document: dict[str, Any], body: dict[str, Any]) -> bool:
    validator = jsonschema.Draft202012Validator(_request_schema(document))
    return validator.is_valid(body)


@pytest.mark.parametrize("client_keys", [False, True])
@pytest.mark.parametrize("artifact_refs", [False, True])
def test_every_policy_gives_valid_openapi(client_keys: bool, artifact_refs: bool) -> None:
    validate(build_openapi(secured=True, client_keys=client_keys, artifact_refs=artifact_refs))


def test_without_client_keys_a_key_and_an_endpoint_are_refused() -> None:
    document = build_openapi(secured=False)
    base = {"prompt_id": "hello"}
    assert _accepts(document, base)
    assert _accepts(document, {**base, "api_key": None})
    assert _accepts(document, {**base, "api_key": "  "})  # blank: no key
    assert not _accepts(document, {**base, "api_key": "sk-ant-a-real-looking-key"})
    assert not _accepts(document, {**base, "overrides": {"endpoint": "https://example.com"}})
    description = _request_schema(document)["properties"]["api_key"]["description"]
    assert "refused" in description


def test_with_client_keys_an_endpoint_needs_a_key_that_is_not_blank() -> None:
    document = build_openapi(secured=False, client_keys=True)
    base = {"prompt_id": "hello"}
    key = "sk-ant-client-12345"
    assert _accepts(document, {**base, "api_key": key})
    assert _accepts(
        document, {**base, "api_key": "EMPTY", "overrides": {"endpoint": "https://x.example"}}
    )
    assert _accepts(document, {**base, "api_key": " "})
    elsewhere = {"endpoint": "https://gateway.example"}
    assert _accepts(document, {**base, "api_key": key, "overrides": elsewhere})
    assert not _accepts(document, {**base, "overrides": elsewhere})
    assert not _accepts(document, {**base, "api_key": " ", "overrides": elsewhere})


def test_artifact_references_are_shown_only_where_they_are_read() -> None:
    by_value = {"prompt_id": "p", "artifacts": {"doc": {"text": "hello"}}}
    by_ref = {"prompt_id": "p", "artifacts": {"doc": "files/card.txt"}}
    assert _accepts(build_openapi(secured=False), by_value)
    assert not _accepts(build_openapi(secured=False), by_ref)
    assert _accepts(build_openapi(secured=False, artifact_refs=True), by_ref)


@pytest.mark.parametrize(
    ("encoded", "decodes"),
    [
        *[("", True), ("QUJD", True), ("QUI=", True), ("QQ==", True), ("QUJD=", True)],
        *[("=", False), ("QUJ", False), ("Q===", False), ("QUJDR", False), ("QU I=", False)],
    ],
)
def test_the_base64_pattern_is_what_the_server_decodes(
    project: Path, encoded: str, decodes: bool
) -> None:
    """The document's pattern and the server agree on every case (checked by both)."""
    document = build_openapi(secured=False)
    content = document["components"]["schemas"]["ArtifactContent"]["oneOf"][1]
    pattern = content["properties"]["base64"]["pattern"]
    assert (re.search(pattern, encoded) is not None) is decodes
    body = {"prompt_id": "describe", "artifacts": {"scan": {"base64": encoded}}}
    answer = call(create_app(engine_for(project)), "POST", "/v1/prepare", json=body)
    refused_as_base64 = answer.status_code == 400 and "base64" in answer.text
    assert refused_as_base64 is not decodes, answer.text


def test_the_server_serves_the_document_of_its_own_policy(project: Path) -> None:
    open_ = call(create_app(engine_for(project)), "GET", "/openapi.json").json()
    keyed = call(
        create_app(engine_for(project), allow_client_keys=True), "GET", "/openapi.json"
    ).json()
    assert not _accepts(open_, {"prompt_id": "hello", "api_key": "sk-ant-a-real-looking-key"})
    assert _accepts(keyed, {"prompt_id": "hello", "api_key": "sk-ant-a-real-looking-key"})


def test_the_prompt_id_parameter_carries_the_pattern_ids_are_checked_against(
    project: Path,
) -> None:
    document = build_openapi(secured=False)
    (parameter,) = document["paths"]["/v1/prompts/{id}"]["get"]["parameters"]
    assert parameter["schema"]["pattern"] == PROMPT_ID_PATTERN.pattern
    app = create_app(engine_for(project))
    for good, bad in (("greet", "Greet"), ("extract/contact", "extract//contact")):
        assert call(app, "GET", f"/v1/prompts/{good}").status_code == 200
        assert call(app, "GET", f"/v1/prompts/{bad}").status_code == 400
