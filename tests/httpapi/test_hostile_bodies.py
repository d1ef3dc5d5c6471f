"""Bodies built to break a JSON reader: nested 100,000 deep anywhere in a RunRequest. Refused as
not a RunRequest (400), never an internal error, on both routes that read a body."""

from __future__ import annotations

from pathlib import Path

import pytest

from scriptorium.httpapi import create_app
from tests.httpapi.project import call, engine_for, error_of

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "body",
    [
        DEEP,
        '{"prompt_id": "greet", "inputs": {"name": ' + DEEP + "}}",
        '{"prompt_id": "greet", "metadata": {"x": ' + DEEP + "}}",
        '{"prompt_id": "greet", "overrides": ' + "{" * 50_000 + "}" * 50_000 + "}",
    ],
    ids=["whole", "inputs", "metadata", "overrides"],
)
@pytest.mark.parametrize("url", ["/v1/runs", "/v1/prepare"])
def test_a_body_nested_100000_deep_is_400(project: Path, body: str, url: str) -> None:
    response = call(create_app(engine_for(project)), "POST", url, content=body.encode())
    assert response.status_code == 400, response.text[:500]
    assert error_of(response)["code"] == "invalid_request"
