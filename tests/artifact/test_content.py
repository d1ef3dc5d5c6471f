"""Artifacts given by value: ``ArtifactContent`` goes through the checks a file gets, hashes the
same way, and travels in JSON as ``{"text": ...}`` or ``{"base64": ...}``."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scriptorium
from scriptorium import ArtifactContent, Engine, errors
from scriptorium.artifact.build import artifact_from_content
from scriptorium.testing import FakeClient
from scriptorium.usecase import RunRequest

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24

DOC_PROMPT = """---
profile: offline
artifacts:
  document: {required: true, media_type: "text/*", max_bytes: 64}
---
Read: {{ artifacts.document.text }}
"""
ANY_PROMPT = """---
profile: offline
artifacts:
  blob: {required: true}
---
Size {{ artifacts.blob.size }}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "doc.prompt.md").write_text(DOC_PROMPT, encoding="utf-8")
    (tmp_path / "prompts" / "any.prompt.md").write_text(ANY_PROMPT, encoding="utf-8")
    (tmp_path / "profiles" / "offline.yaml").write_text(
        "provider: fake\nmodel: fake-1\noptions: {responses: [ok]}\n", encoding="utf-8"
    )
    (tmp_path / "card.txt").write_text("Ada Lovelace", encoding="utf-8")
    return tmp_path


def test_artifact_content_is_exported_from_the_package() -> None:
    """``scriptorium.ArtifactContent`` is public and takes data positionally."""
    assert "ArtifactContent" in scriptorium.__all__
    content = ArtifactContent(b"abc", media_type="text/plain", filename="a.txt")
    assert (content.data, content.media_type, content.filename) == (b"abc", "text/plain", "a.txt")
    assert ArtifactContent("hi").data == "hi"


def test_content_by_value_hashes_like_the_same_file(project: Path) -> None:
    """The same bytes as a file and as a value give the same artifact digest and prompt."""
    engine = Engine(project, client=FakeClient(["ok"]))
    by_file = engine.prepare("doc", artifacts={"document": "card.txt"})
    by_value = engine.prepare("doc", artifacts={"document": ArtifactContent("Ada Lovelace")})
    file_record, value_record = by_file.artifacts[0], by_value.artifacts[0]
    assert value_record.sha256 == file_record.sha256
    assert value_record.sha256 == "sha256:" + hashlib.sha256(b"Ada Lovelace").hexdigest()
    assert (file_record.source, value_record.source) == ("file", "value")
    assert by_value.rendered_prompt_hash == by_file.rendered_prompt_hash
    assert by_value.messages[0].content == "Read: Ada Lovelace"


def test_run_accepts_the_json_forms_as_artifacts(project: Path) -> None:
    """``{"text": ...}`` and ``{"base64": ...}`` are accepted wherever a request is built."""
    engine = Engine(project, client=FakeClient(["ok"]))
    text = engine.run("doc", artifacts={"document": {"text": "Grace Hopper"}})
    assert text.prepared.messages[0].content == "Read: Grace Hopper"
    encoded = base64.b64encode(b"Grace Hopper").decode()
    raw = engine.run("doc", artifacts={"document": {"base64": encoded, "media_type": "text/plain"}})
    assert raw.prepared.artifacts[0].sha256 == text.prepared.artifacts[0].sha256


def test_the_request_wire_form_round_trips() -> None:
    """``model_dump_json`` writes the JSON forms; validating it gives the same request."""
    request = RunRequest(
        prompt_id="any",
        artifacts={
            "a": "docs/a.txt",
            "b": ArtifactContent("text"),
            "c": ArtifactContent(PNG, media_type="image/png", filename="scan.png"),
        },
    )
    wire = request.model_dump(mode="json")["artifacts"]
    assert wire["a"] == "docs/a.txt"
    assert wire["b"] == {"text": "text"}
    assert wire["c"] == {
        "base64": base64.b64encode(PNG).decode(),
        "media_type": "image/png",
        "filename": "scan.png",
    }
    assert RunRequest.model_validate_json(request.model_dump_json()) == request


@pytest.mark.parametrize(
    "form",
    [
        {"text": "a", "base64": "YQ=="},
        {},
        {"base64": "not base64!"},
        {"text": 3},
        {"text": "a", "colour": "red"},
    ],
)
def test_malformed_json_forms_are_invalid_requests(project: Path, form: dict[str, object]) -> None:
    """A JSON form that is neither ``text`` nor valid ``base64`` is refused before any call."""
    client = FakeClient(["ok"])
    engine = Engine(project, client=client)
    with pytest.raises(errors.InvalidRequestError):
        engine.run("doc", artifacts={"document": form})
    assert client.calls == 0


def test_content_gets_the_declared_checks(project: Path) -> None:
    """``max_bytes``, the declared media type and text decoding apply to values as to files."""
    engine = Engine(project, client=FakeClient(["ok"]))
    with pytest.raises(errors.ArtifactLoadError, match="larger than 64"):
        engine.prepare("doc", artifacts={"document": ArtifactContent("x" * 65)})
    with pytest.raises(errors.ArtifactLoadError, match="declares text/"):
        engine.prepare("doc", artifacts={"document": ArtifactContent(PNG, media_type="image/png")})
    with pytest.raises(errors.ArtifactLoadError, match="UTF-8"):
        engine.prepare("doc", artifacts={"document": ArtifactContent(b"\xff\xfe\xfa")})
    with pytest.raises(errors.ArtifactLoadError, match="declares text/"):
        engine.prepare("doc", artifacts={"document": ArtifactContent(PNG, filename="scan.png")})


def test_undeclared_content_is_refused_like_an_undeclared_file(project: Path) -> None:
    engine = Engine(project, client=FakeClient(["ok"]))
    with pytest.raises(errors.InvalidRequestError, match="extra"):
        engine.prepare(
            "doc",
            artifacts={"document": ArtifactContent("a"), "extra": ArtifactContent("b")},
        )


def test_media_type_comes_from_the_content_then_the_filename(project: Path) -> None:
    """Without a declaration: the given type, else the filename's, else text/plain for text and
    application/octet-stream for bytes."""
    engine = Engine(project, client=FakeClient(["ok"]))

    def media(content: ArtifactContent) -> str:
        return engine.prepare("any", artifacts={"blob": content}).artifacts[0].media_type

    assert media(ArtifactContent(b"{}", media_type="application/json")) == "application/json"
    assert media(ArtifactContent(b"# t", filename="notes.md")) == "text/markdown"
    assert media(ArtifactContent("plain")) == "text/plain"
    assert media(ArtifactContent(b"\x00\x01")) == "application/octet-stream"


def test_the_record_of_a_value_names_its_filename_and_no_content(project: Path) -> None:
    engine = Engine(project, client=FakeClient(["ok"]))
    prepared = engine.prepare(
        "any", artifacts={"blob": ArtifactContent(b"secret-ish", filename="n.bin")}
    )
    record = prepared.artifacts[0]
    assert (record.ref, record.source, record.size) == ("n.bin", "value", 10)
    assert "secret-ish" not in prepared.model_dump_json()


@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=200) | st.text(max_size=100))
def test_any_content_is_hashed_as_its_bytes_or_refused_cleanly(data: bytes | str) -> None:
    """Arbitrary content gives the sha256 of its bytes, or an ArtifactLoadError; nothing else."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    try:
        artifact = artifact_from_content(ArtifactContent(data), name="x")
    except errors.ArtifactLoadError:
        return
    assert artifact.sha256 == "sha256:" + hashlib.sha256(raw).hexdigest()
    assert artifact.size == len(raw)
