"""Artifacts given by value in the JSON body: text and base64, checked and hashed like files,
refused with the right status when they break the prompt's declaration."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import httpx

from scriptorium._testing import media
from scriptorium.httpapi import create_app
from scriptorium.testing import FakeAnthropicServer
from tests.httpapi.project import call, engine_for, error_of

CARD = "Ada Lovelace, ada@example.com"


def _run(project: Path, document: object) -> httpx.Response:
    app = create_app(engine_for(project))
    body = {"prompt_id": "extract/contact", "artifacts": {"document": document}}
    return call(app, "POST", "/v1/runs", json=body)


def test_text_content_runs_and_is_hashed_like_a_file(project: Path) -> None:
    response = _run(project, {"text": CARD})
    assert response.status_code == 200, response.text
    body = response.json()
    (record,) = body["prepared"]["artifacts"]
    assert record["sha256"] == "sha256:" + hashlib.sha256(CARD.encode()).hexdigest()
    assert record["size"] == len(CARD)
    assert record["source"] == "value"
    assert body["validation"]["value"] == {"name": "Ada", "email": "ada@example.com"}


def test_base64_content_with_a_media_type_and_filename(project: Path) -> None:
    encoded = base64.b64encode(CARD.encode()).decode()
    response = _run(
        project, {"base64": encoded, "media_type": "text/plain", "filename": "card.txt"}
    )
    assert response.status_code == 200, response.text
    (record,) = response.json()["prepared"]["artifacts"]
    assert record["media_type"] == "text/plain"
    assert record["sha256"] == "sha256:" + hashlib.sha256(CARD.encode()).hexdigest()


def test_content_over_the_declared_size_is_413(project: Path) -> None:
    response = _run(project, {"text": "x" * 65})
    assert response.status_code == 413
    error = error_of(response)
    assert (error["code"], error["reason"]) == ("artifact_load", "too_large")


def test_bytes_that_are_not_the_declared_text_are_400_artifact_load(project: Path) -> None:
    encoded = base64.b64encode(b"\xff\xfe\x00binary").decode()
    response = _run(project, {"base64": encoded, "media_type": "text/plain"})
    assert response.status_code == 400
    assert error_of(response)["code"] == "artifact_load"


def test_content_of_a_type_the_prompt_does_not_take_is_400(project: Path) -> None:
    encoded = base64.b64encode(b"%PDF-1.4 not text").decode()
    response = _run(project, {"base64": encoded, "media_type": "application/pdf"})
    assert response.status_code == 400
    assert error_of(response)["code"] == "artifact_load"


def test_malformed_content_is_400_invalid_request(project: Path) -> None:
    for document in ({"base64": "not base64!!"}, {"text": 3}, {"text": "a", "base64": "YQ=="}, {}):
        response = _run(project, document)
        assert response.status_code == 400, document
        assert error_of(response)["code"] == "invalid_request"


def test_an_image_by_value_reaches_the_provider_and_never_comes_back(
    project: Path, server: FakeAnthropicServer
) -> None:
    """A PNG sent as base64 goes to the real SDK as an image block; the answer describes it by
    media type, size and sha256, never by its bytes."""
    png = media.png(40, 30)
    encoded = base64.b64encode(png).decode()
    server.reply("A small picture.")
    app = create_app(engine_for(project))
    body = {
        "prompt_id": "describe",
        "artifacts": {"scan": {"base64": encoded, "media_type": "image/png"}},
    }
    response = call(app, "POST", "/v1/runs", json=body)
    assert response.status_code == 200, response.text
    (record,) = response.json()["prepared"]["artifacts"]
    assert (record["media_type"], record["size"]) == ("image/png", len(png))
    assert record["sha256"] == "sha256:" + hashlib.sha256(png).hexdigest()
    assert encoded not in response.text
    sent = server.requests[-1].body["messages"][0]["content"]
    images = [part for part in sent if part.get("type") == "image"]
    assert images[0]["source"]["data"] == encoded


def test_bytes_that_are_not_the_declared_image_are_refused(project: Path) -> None:
    encoded = base64.b64encode(b"GIF89a not a png at all").decode()
    app = create_app(engine_for(project))
    body = {
        "prompt_id": "describe",
        "artifacts": {"scan": {"base64": encoded, "media_type": "image/png"}},
    }
    response = call(app, "POST", "/v1/runs", json=body)
    assert response.status_code == 400
    assert error_of(response)["code"] == "artifact_load"
