"""Bearer auth, the concurrency bound, the access log, and the arguments create_app refuses."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from scriptorium.engine import Engine
from scriptorium.errors import InvalidRequestError
from scriptorium.httpapi import ACCESS_LOGGER, create_app
from scriptorium.llm.model import LLMRequest
from scriptorium.testing import FakeClient
from tests.httpapi.project import CANARY, call, engine_for, error_of

TOKEN = "http-token-3b9d0e1f7a"
ROUTES = [
    ("GET", "/v1/prompts"),
    ("GET", "/v1/prompts/greet"),
    ("GET", "/v1/profiles"),
    ("GET", "/openapi.json"),
    ("POST", "/v1/runs"),
    ("POST", "/v1/prepare"),
    ("GET", "/no/such/route"),
]


@pytest.mark.parametrize(("method", "url"), ROUTES)
@pytest.mark.parametrize(
    "authorization", [None, "Bearer wrong-token", f"Basic {TOKEN}", "Bearer", f"Bearer {TOKEN}x"]
)
def test_every_route_but_healthz_needs_the_token(
    project: Path, method: str, url: str, authorization: str | None
) -> None:
    """Without the right bearer token: 401 unauthorized with WWW-Authenticate, before anything
    else is looked at (an unknown route too)."""
    app = create_app(engine_for(project), token=TOKEN)
    headers = {} if authorization is None else {"Authorization": authorization}
    response = call(app, method, url, headers=headers, json={"prompt_id": "greet"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert error_of(response)["code"] == "unauthorized"
    assert TOKEN not in response.text


def test_the_right_token_opens_every_route(project: Path) -> None:
    app = create_app(engine_for(project), token=TOKEN)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    body = {"prompt_id": "greet", "inputs": {"name": "Ada"}}
    for method, url in ROUTES[:-1]:
        response = call(app, method, url, headers=headers, json=body)
        assert response.status_code == 200, (url, response.text)
    lower = call(app, "GET", "/v1/prompts", headers={"authorization": f"bearer {TOKEN}"})
    assert lower.status_code == 200


def test_healthz_needs_no_token(project: Path) -> None:
    app = create_app(engine_for(project), token=TOKEN)
    assert call(app, "GET", "/healthz").status_code == 200


def test_the_openapi_document_says_whether_a_token_is_needed(project: Path) -> None:
    secured = call(
        create_app(engine_for(project), token=TOKEN),
        "GET",
        "/openapi.json",
        headers={"Authorization": f"Bearer {TOKEN}"},
    ).json()
    assert secured["security"] == [{"bearer": []}]
    assert "401" in secured["paths"]["/v1/runs"]["post"]["responses"]
    assert secured["paths"]["/healthz"]["get"]["security"] == []
    open_ = call(create_app(engine_for(project)), "GET", "/openapi.json").json()
    assert "security" not in open_
    assert "401" not in open_["paths"]["/v1/runs"]["post"]["responses"]


def test_at_most_concurrency_runs_are_in_flight(tmp_path: Path, project: Path) -> None:
    """Twelve requests at once through an app bounded at three: never more than three runs reach
    the client together, and every request is answered."""
    state = {"now": 0, "peak": 0}

    async def answer(request: LLMRequest) -> str:
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        # Hand the loop to the other requests so that, unbounded, they would all pile in here.
        for _ in range(20):
            await asyncio.sleep(0)
        state["now"] -= 1
        return "Hi"

    engine = Engine(project, client=FakeClient([answer]))
    app = create_app(engine, concurrency=3)

    async def go() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            body = {"prompt_id": "greet", "inputs": {"name": "Ada"}}
            return list(
                await asyncio.gather(*(client.post("/v1/runs", json=body) for _ in range(12)))
            )

    responses = asyncio.run(go())
    assert [r.status_code for r in responses] == [200] * 12
    assert state["peak"] == 3


def test_each_request_is_logged_once_with_id_route_status_and_duration(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """One INFO line per request on the access logger: the request id, method, the route (its
    pattern), status and duration; never the body, the inputs, a key or the token."""
    app = create_app(engine_for(project), allow_client_keys=True, token=TOKEN)
    secret_input = "very-private-input-text"
    client_key = "sk-ant-client-key-in-body-77"
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        response = call(
            app,
            "POST",
            "/v1/runs",
            headers={"Authorization": f"Bearer {TOKEN}"},
            json={"prompt_id": "greet", "inputs": {"name": secret_input}, "api_key": client_key},
        )
        detail = call(app, "GET", "/v1/prompts/greet", headers={"Authorization": f"Bearer {TOKEN}"})
    records = [r for r in caplog.records if r.name == ACCESS_LOGGER]
    assert len(records) == 2
    first: Any = records[0]
    assert first.request_id == response.headers["x-request-id"]
    assert (first.method, first.route, first.status) == ("POST", "/v1/runs", 200)
    assert first.duration_ms >= 0
    second: Any = records[1]
    assert second.route == "/v1/prompts/{id:path}"
    assert second.request_id == detail.headers["x-request-id"]
    text = "\n".join(r.getMessage() for r in records)
    for secret in (secret_input, client_key, CANARY, TOKEN):
        assert secret not in text
    assert response.headers["x-request-id"] in text


def test_a_callers_request_id_is_kept_when_it_is_a_plain_token(project: Path) -> None:
    app = create_app(engine_for(project))
    kept = call(app, "GET", "/healthz", headers={"X-Request-ID": "trace-42.a"})
    assert kept.headers["x-request-id"] == "trace-42.a"
    replaced = call(app, "GET", "/healthz", headers={"X-Request-ID": "two words\tand a tab"})
    assert replaced.headers["x-request-id"] != "two words\tand a tab"


@pytest.mark.parametrize("options", [{"token": ""}, {"concurrency": 0}, {"max_body_bytes": 0}])
def test_create_app_refuses_nonsense_settings(project: Path, options: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequestError):
        create_app(engine_for(project), **options)


def test_a_caller_hanging_up_mid_body_gets_no_answer_and_a_499_log_line(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The body never completes: nothing is sent, the access line says 499, no error is logged."""
    app = create_app(engine_for(project))
    sent: list[Any] = []

    async def go() -> None:
        messages = [
            {"type": "http.request", "body": b'{"prompt_id": ', "more_body": True},
            {"type": "http.disconnect"},
        ]

        async def receive() -> Any:
            return messages.pop(0)

        async def send(message: Any) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "method": "POST",
            "path": "/v1/runs",
            "raw_path": b"/v1/runs",
            "query_string": b"",
            "headers": [(b"content-type", b"application/json")],
            "http_version": "1.1",
            "scheme": "http",
            "server": ("127.0.0.1", 80),
            "client": ("127.0.0.1", 1),
            "root_path": "",
        }
        await app(scope, receive, send)

    with caplog.at_level(logging.INFO, logger="scriptorium.httpapi"):
        asyncio.run(go())
    assert sent == []
    (line,) = [r for r in caplog.records if r.name == ACCESS_LOGGER]
    assert line.levelno == logging.INFO
    assert " 499 " in line.getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
