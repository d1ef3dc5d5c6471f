"""What ``serve --repair`` and ``serve --cors-origin`` change, and bodies as generated OpenAPI
clients send them (every optional field present, ``null`` when unset)."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from scriptorium import Engine
from scriptorium.httpapi import create_app
from scriptorium.testing import FakeClient

ORIGIN = "https://app.example"


def _engine(project: Path, *, repair: bool = False) -> Engine:
    return Engine(project, client=FakeClient(["Hello!"] * 4), repair=repair)


def test_a_request_asking_for_repair_is_refused_without_a_repairer(project: Path) -> None:
    with TestClient(create_app(_engine(project))) as http:
        answer = http.post(
            "/v1/runs",
            json={
                "prompt_id": "greet",
                "inputs": {"name": "Ada"},
                "overrides": {"repair_attempts": 1},
            },
        )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "invalid_request"
    assert "--repair" in error["message"]
    assert error["field"] == "overrides.repair_attempts"


def test_repair_attempts_zero_is_no_request_for_repair(project: Path) -> None:
    with TestClient(create_app(_engine(project))) as http:
        answer = http.post(
            "/v1/runs",
            json={
                "prompt_id": "greet",
                "inputs": {"name": "Ada"},
                "overrides": {"repair_attempts": 0},
            },
        )
    assert answer.status_code == 200


def test_a_server_with_a_repairer_takes_repair_requests(project: Path) -> None:
    with TestClient(create_app(_engine(project, repair=True))) as http:
        answer = http.post(
            "/v1/runs",
            json={
                "prompt_id": "greet",
                "inputs": {"name": "Ada"},
                "overrides": {"repair_attempts": 2},
            },
        )
    assert answer.status_code == 200
    assert answer.json()["prepared"]["output"]["repair_attempts"] == 2


def test_nulls_for_optional_fields_mean_absent(project: Path) -> None:
    body = {
        "prompt_id": "greet",
        "profile": None,
        "inputs": {"name": "Ada"},
        "artifacts": None,
        "metadata": None,
        "overrides": None,
        "api_key": None,
    }
    with TestClient(create_app(_engine(project))) as http:
        assert http.post("/v1/runs", json=body).status_code == 200
        assert http.post("/v1/prepare", json={**body, "inputs": None}).status_code == 400


def test_no_cross_origin_access_by_default(project: Path) -> None:
    with TestClient(create_app(_engine(project))) as http:
        answer = http.get("/v1/prompts", headers={"Origin": ORIGIN})
    assert answer.status_code == 200
    assert "access-control-allow-origin" not in answer.headers


def test_a_configured_origin_gets_its_preflight_and_its_answers(project: Path) -> None:
    app = create_app(_engine(project), token="s3cret-token", cors_origins=[ORIGIN])
    with TestClient(app) as http:
        preflight = http.options(
            "/v1/runs",
            headers={
                "Origin": ORIGIN,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type",
            },
        )
        assert preflight.status_code == 200  # answered before the token is asked for
        assert preflight.headers["access-control-allow-origin"] == ORIGIN
        answer = http.post(
            "/v1/runs",
            headers={"Origin": ORIGIN, "Authorization": "Bearer s3cret-token"},
            json={"prompt_id": "greet", "inputs": {"name": "Ada"}},
        )
        assert answer.status_code == 200
        assert answer.headers["access-control-allow-origin"] == ORIGIN
        assert "x-request-id" in answer.headers["access-control-expose-headers"].lower()
        other = http.options(
            "/v1/runs",
            headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
        )
        assert other.headers.get("access-control-allow-origin") != "https://evil.example"


def test_a_preflight_allows_every_header_the_server_reads(project: Path) -> None:
    """A browser client sending its own request id and a W3C trace context is not refused."""
    app = create_app(_engine(project), token="s3cret-token", cors_origins=[ORIGIN])
    asked = "authorization, content-type, x-request-id, traceparent"
    with TestClient(app) as http:
        preflight = http.options(
            "/v1/runs",
            headers={
                "Origin": ORIGIN,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": asked,
            },
        )
    assert preflight.status_code == 200, preflight.text
    allowed = {
        h.strip().lower() for h in preflight.headers["access-control-allow-headers"].split(",")
    }
    assert {"authorization", "content-type", "x-request-id", "traceparent"} <= allowed


def test_serve_passes_repair_and_cors_origins_on() -> None:
    from scriptorium.cli.parser import build_parser

    args = build_parser().parse_args(
        ["serve", "--repair", "--cors-origin", ORIGIN, "--cors-origin", "http://localhost:5173"]
    )
    assert args.repair is True
    assert args.cors_origins == [ORIGIN, "http://localhost:5173"]
    assert build_parser().parse_args(["serve"]).cors_origins == []
