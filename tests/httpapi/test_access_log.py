"""The access log cannot be forged: a path is written percent-encoded (no control character,
whatever the caller sent), and a matched route as its pattern."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from scriptorium.httpapi import ACCESS_LOGGER, create_app
from tests.httpapi.project import call, engine_for

TOKEN = "access-log-token-7a1b2c3d"
FORGERY = "/x%0a2026-01-01 INFO fake 0000 GET /v1/runs 200 1.0ms%0d%0a%09%1b[31m%e2%80%a8"


def _records(caplog: pytest.LogCaptureFixture) -> list[Any]:
    return [r for r in caplog.records if r.name == ACCESS_LOGGER]


def _clean(text: str) -> bool:
    return all(ch.isprintable() and ch.isascii() for ch in text)


@pytest.mark.parametrize("token", [None, TOKEN], ids=["open", "token"])
@pytest.mark.parametrize("path", [FORGERY, "/v1/prompts/a%0ab", "/%00%7f%c2%85"])
def test_a_path_is_logged_without_control_characters(
    project: Path, caplog: pytest.LogCaptureFixture, token: str | None, path: str
) -> None:
    """Unknown routes, and any route refused before routing (no token): the line holds the path
    percent-encoded, one line, nothing the caller could use to start another."""
    app = create_app(engine_for(project), token=token)
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        call(app, "GET", path)
    (record,) = _records(caplog)
    message = record.getMessage()
    assert _clean(message), message
    if record.route is None:
        assert _clean(record.path)
        assert record.path in message
        assert "%0A" in record.path or "%00" in record.path


def test_a_matched_route_is_logged_as_its_pattern(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(engine_for(project))
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        call(app, "GET", "/v1/prompts/no%09here%1b[2J")
    (record,) = _records(caplog)
    assert record.route == "/v1/prompts/{id:path}"
    assert record.path is None
    assert "\n" not in record.getMessage()
