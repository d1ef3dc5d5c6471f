"""A request's own key over HTTP: a blank one is no key (so it never unlocks an endpoint override
that would carry the server's key away), a short one is refused, and the server's key goes only
where its profiles say."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scriptorium.httpapi import create_app
from scriptorium.testing import FakeAnthropicServer
from tests.httpapi.project import CANARY, call, engine_for, error_of

BLANKS = ["", " ", "\t", "\n  \r\n"]


def _key_sent(server: FakeAnthropicServer) -> str:
    headers = server.requests[-1].headers
    return headers.get("x-api-key", "") + headers.get("authorization", "")


@pytest.fixture
def elsewhere() -> Iterator[FakeAnthropicServer]:
    """A second loopback server standing for an address the caller picked."""
    with FakeAnthropicServer() as other:
        yield other


@pytest.mark.parametrize("blank", BLANKS, ids=repr)
def test_a_blank_key_with_an_endpoint_override_is_refused_like_no_key(
    project: Path, server: FakeAnthropicServer, elsewhere: FakeAnthropicServer, blank: str
) -> None:
    """400 on ``overrides.endpoint``, and neither server hears a thing: the server's key never
    reaches the address the request named."""
    app = create_app(engine_for(project), allow_client_keys=True)
    body = {
        "prompt_id": "hello",
        "inputs": {"name": "Ada"},
        "api_key": blank,
        "overrides": {"endpoint": elsewhere.url},
    }
    for url in ("/v1/runs", "/v1/prepare"):
        response = call(app, "POST", url, json=body)
        assert response.status_code == 400, response.text
        assert error_of(response)["field"] == "overrides.endpoint"
    assert elsewhere.requests == []
    assert server.requests == []


@pytest.mark.parametrize("blank", BLANKS, ids=repr)
def test_a_blank_key_on_a_server_without_client_keys_is_no_key(
    project: Path, server: FakeAnthropicServer, blank: str
) -> None:
    """Nothing was given, so nothing is refused: the run uses the server's own key."""
    server.reply("Hello, Ada.")
    app = create_app(engine_for(project))
    body = {"prompt_id": "hello", "inputs": {"name": "Ada"}, "api_key": blank}
    response = call(app, "POST", "/v1/runs", json=body)
    assert response.status_code == 200, response.text
    assert CANARY in _key_sent(server)


@pytest.mark.parametrize("short", ["EMPTY", "none", "Q"])
def test_a_short_key_is_a_key_as_given(
    project: Path, server: FakeAnthropicServer, elsewhere: FakeAnthropicServer, short: str
) -> None:
    """No minimum length (local servers document ``EMPTY`` and ``none``): a short client key
    goes to its own endpoint exactly as given."""
    elsewhere.reply("Hello, Ada.")
    app = create_app(engine_for(project), allow_client_keys=True)
    body = {
        "prompt_id": "hello",
        "inputs": {"name": "Ada"},
        "api_key": short,
        "overrides": {"endpoint": elsewhere.url},
    }
    response = call(app, "POST", "/v1/runs", json=body)
    assert response.status_code == 200, response.text
    assert short in _key_sent(elsewhere)
    assert server.requests == []


def test_a_real_client_key_may_choose_its_endpoint(
    project: Path, server: FakeAnthropicServer, elsewhere: FakeAnthropicServer
) -> None:
    """The one case an override is allowed: the request's own key goes to its own address."""
    elsewhere.reply("Hello from elsewhere.")
    client_key = "sk-ant-client-owned-42c0ffee"
    app = create_app(engine_for(project), allow_client_keys=True)
    body = {
        "prompt_id": "hello",
        "inputs": {"name": "Ada"},
        "api_key": client_key,
        "overrides": {"endpoint": elsewhere.url},
    }
    response = call(app, "POST", "/v1/runs", json=body)
    assert response.status_code == 200, response.text
    assert client_key in _key_sent(elsewhere)
    assert server.requests == []
