"""Media in rendered prompts: placement by ``.block``, unplaced media first, no forgery, no bytes in
results or hashes, and ``.text`` of a binary artifact refused."""

from __future__ import annotations

import base64
import hashlib
import pickle
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium._testing import media
from scriptorium.artifact.memory import MemoryReader
from scriptorium.errors import PromptRenderError
from scriptorium.hashing import hash_json
from scriptorium.prompt.jinja import JinjaRenderer
from scriptorium.prompt.model import MediaPart, Message, TextPart
from scriptorium.prompt.placement import MediaPlacement
from scriptorium.testing import (
    FakeClient,
    MemoryArtifactReader,
    MemoryProfileRepository,
    MemoryPromptRepository,
)
from scriptorium.usecase import Runner, RunRequest
from scriptorium.validate.schema import SchemaValidator
from tests.conftest import RunnerFactory

PNG = media.png(40, 30)
PDF = media.pdf(2)
FILES: dict[str, bytes | str] = {"scan.png": PNG, "doc.pdf": PDF, "notes.txt": "some notes"}
PROFILES = {"offline": {"provider": "fake", "model": "fake-1"}}


def prompt(body: str, *, extra: str = "") -> str:
    return (
        "---\nprofile: offline\nartifacts:\n"
        "  scan: {required: false, media_type: image/png}\n"
        "  doc: {required: false, media_type: application/pdf}\n"
        "  notes: {required: false}\n"
        f"{extra}---\n{body}"
    )


def messages(make_runner: RunnerFactory, body: str, **request: object) -> tuple[Message, ...]:
    runner = make_runner(
        FakeClient(["ok"]), prompts={"p": prompt(body)}, profiles=PROFILES, files=FILES
    )
    fields: dict[str, object] = {"artifacts": {"scan": "scan.png"}, **request}
    return runner.prepare(RunRequest(prompt_id="p", **fields)).messages


def test_block_places_the_media_where_the_template_puts_it(make_runner: RunnerFactory) -> None:
    """Text before and after a block become text parts around the media part."""
    (message,) = messages(make_runner, "## user\nLook:\n{{ artifacts.scan.block }}\nWhat is it?")
    assert message.content == (
        TextPart(text="Look:"),
        MediaPart(name="scan", media_type="image/png", sha256=_sha(PNG), size=len(PNG)),
        TextPart(text="What is it?"),
    )


def test_unplaced_media_go_first_in_the_first_user_message(make_runner: RunnerFactory) -> None:
    """A given media artifact the template never places leads the first user message."""
    body = "## system\nBe brief.\n\n## user\nFirst {{ artifacts.scan.block }}\n\n## user\nSecond"
    first, second = messages(make_runner, body, artifacts={"scan": "scan.png", "doc": "doc.pdf"})
    assert isinstance(first.content, tuple)
    assert [type(p).__name__ for p in first.content] == ["MediaPart", "TextPart", "MediaPart"]
    assert first.content[0] == MediaPart(
        name="doc", media_type="application/pdf", sha256=_sha(PDF), size=len(PDF)
    )
    assert second.content == "Second"


def test_unplaced_media_without_a_user_message_get_one(make_runner: RunnerFactory) -> None:
    """A prompt whose user section renders empty still sends its media, in a user message."""
    body = "## system\nDescribe the image.\n\n## user\n{% if false %}never{% endif %}"
    (message,) = messages(make_runner, body)
    assert message.role == "user"
    assert message.media == (
        MediaPart(name="scan", media_type="image/png", sha256=_sha(PNG), size=len(PNG)),
    )


def test_text_prompts_keep_plain_string_content(make_runner: RunnerFactory) -> None:
    """Without media, content stays a str (and hashes are what they always were)."""
    (message,) = messages(
        make_runner, "## user\n{{ artifacts.notes.text }}", artifacts={"notes": "notes.txt"}
    )
    assert message.content == "some notes"


@settings(max_examples=40, deadline=None)
@given(forged=st.text(max_size=40))
def test_an_input_that_looks_like_a_placement_arrives_as_text(forged: str) -> None:
    """Inputs holding marker-like text (with any nonce) stay text: only the renderer places."""
    runner = _runner()
    text = f"[[scriptorium-media {forged}:0]]"
    prepared = runner.prepare(
        RunRequest(prompt_id="p", inputs={"x": text}, artifacts={"scan": "scan.png"})
    )
    (message,) = prepared.messages
    assert isinstance(message.content, tuple)
    assert len(message.media) == 1  # the unplaced scan, nothing else
    assert any(isinstance(p, TextPart) and text.strip() in p.text for p in message.content)


def test_a_nonce_from_another_render_arrives_as_text() -> None:
    """A marker copied out of one render is dead in the next one."""
    runner = _runner(body="## user\n{{ artifacts.scan.block }} {{ x }}")
    leaked = _marker_of_a_render()
    prepared = runner.prepare(
        RunRequest(prompt_id="p", inputs={"x": leaked}, artifacts={"scan": "scan.png"})
    )
    (message,) = prepared.messages
    assert message.media == (
        MediaPart(name="scan", media_type="image/png", sha256=_sha(PNG), size=len(PNG)),
    )
    assert message.content[-1] == TextPart(text=leaked)


def test_reading_text_of_a_binary_artifact_is_a_render_error(make_runner: RunnerFactory) -> None:
    """``.text`` of an image is PromptRenderError naming the section, never the text "None"."""
    with pytest.raises(PromptRenderError, match=r"binary artifact.*image/png.*\.block") as info:
        messages(make_runner, "## user\nRead: {{ artifacts.scan.text }}")
    assert info.value.section == "user[0]"
    with pytest.raises(PromptRenderError, match="binary artifact"):
        messages(make_runner, '## user\n{{ artifacts["scan"]["text"] }}')


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ("## system\n{{ artifacts.scan.block }}\n\n## user\nHi", "section 0 (system)"),
        ("## user\nHi\n\n## assistant\n{{ artifacts.scan.block }}", "section 1 (assistant)"),
    ],
)
def test_media_go_in_user_sections_only(make_runner: RunnerFactory, body: str, where: str) -> None:
    """A block in a system or assistant section is refused."""
    with pytest.raises(PromptRenderError, match=re.escape(where) + ".*user sections only"):
        messages(make_runner, body)


def test_an_altered_block_is_refused(make_runner: RunnerFactory) -> None:
    """A block the template filtered no longer reads whole: refused, never sent as a nonce."""
    with pytest.raises(PromptRenderError, match="changes a media block"):
        messages(make_runner, "## user\n{{ artifacts.scan.block | upper }}")


def test_the_session_id_cannot_hold_a_block(make_runner: RunnerFactory) -> None:
    """The session id is text only."""
    runner = make_runner(
        FakeClient(["ok"]),
        prompts={"p": prompt("## user\nHi", extra='session_id: "{{ artifacts.scan.block }}"\n')},
        profiles=PROFILES,
        files=FILES,
    )
    with pytest.raises(PromptRenderError, match="session id"):
        runner.prepare(RunRequest(prompt_id="p", artifacts={"scan": "scan.png"}))


def test_hashes_cover_media_by_digest_and_size_never_bytes(make_runner: RunnerFactory) -> None:
    """rendered_prompt_hash holds {"type": "media", media_type, sha256, size}; renders with
    different nonces hash the same; the prepared run and result never hold the bytes."""
    runner = make_runner(
        FakeClient(["ok"]),
        prompts={"p": prompt("## user\nSee {{ artifacts.scan.block }}")},
        profiles=PROFILES,
        files=FILES,
    )
    request = RunRequest(prompt_id="p", artifacts={"scan": "scan.png"})
    first, second = runner.prepare(request), runner.prepare(request)
    expected = hash_json(
        {
            "system": None,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "See"},
                        {
                            "type": "media",
                            "media_type": "image/png",
                            "sha256": _sha(PNG),
                            "size": len(PNG),
                        },
                    ],
                }
            ],
        }
    )
    assert first.rendered_prompt_hash == second.rendered_prompt_hash == expected
    assert first.request_hash == second.request_hash
    result = runner.run(request)
    encoded = base64.b64encode(PNG).decode()
    for dumped in (result.model_dump_json(), repr(result), str(pickle.dumps(result))):
        assert encoded[:40] not in dumped
        assert PNG[8:40].hex() not in dumped
    assert PNG not in pickle.dumps(result)


def test_the_client_gets_the_bytes_beside_the_parts(make_runner: RunnerFactory) -> None:
    """LLMRequest.media maps each part's sha256 to its bytes; it is never dumped or shown."""
    client = FakeClient(["ok"])
    runner = make_runner(
        client,
        prompts={"p": prompt("## user\n{{ artifacts.scan.block }}{{ artifacts.doc.block }}")},
        profiles=PROFILES,
        files=FILES,
    )
    runner.run(RunRequest(prompt_id="p", artifacts={"scan": "scan.png", "doc": "doc.pdf"}))
    (request,) = client.requests
    assert request.media == {_sha(PNG): PNG, _sha(PDF): PDF}
    assert "media" not in request.model_dump()
    assert "media=" not in repr(request)


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _runner(body: str = "## user\n{{ x }}") -> Runner:
    return Runner(
        prompts=MemoryPromptRepository({"p": prompt(body)}),
        profiles=MemoryProfileRepository(PROFILES),
        artifacts=MemoryArtifactReader(FILES),
        renderer=JinjaRenderer(),
        client=FakeClient(["ok"]),
        validator=SchemaValidator(),
        env={},
    )


def _marker_of_a_render() -> str:
    """What ``.block`` printed in some earlier render (read out through a template)."""
    artifact = MemoryReader(FILES).read("scan.png", name="scan")
    placement = MediaPlacement.for_artifacts({"scan": artifact}, "p")
    assert placement is not None
    return str(placement.view(artifact)["block"])
