"""The spliced body is byte for byte the body the plain way would send, and only this request's
placeholders are spliced."""

from __future__ import annotations

import base64
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.llm.media.wire import MediaWire, install_hook
from scriptorium.prompt.model import MediaPart

PART = MediaPart(name="f", media_type="application/pdf", sha256="sha256:00", size=0)


@settings(max_examples=60, deadline=None)
@given(
    files=st.lists(st.binary(max_size=3000), min_size=1, max_size=4),
    text=st.text(max_size=50),
)
def test_splicing_gives_the_plain_body(files: list[bytes], text: str) -> None:
    """JSON with placeholders, spliced, equals JSON with the base64 written in."""
    wire = MediaWire()
    params = {"messages": [{"text": text, "data": wire.encode(PART, f)} for f in files]}
    plain = {"messages": [{"text": text, "data": base64.b64encode(f).decode()} for f in files]}
    body = json.dumps(params).encode()
    found = wire.splice(body)
    assert found is not None
    pieces, length = found
    sent = b"".join(wire.chunks(pieces))
    assert sent == json.dumps(plain).encode()
    assert length == len(sent)
    assert wire.inline(params) == plain


def test_large_files_are_encoded_in_slices_that_join_to_one_encoding() -> None:
    """Slices are a multiple of three bytes, so their base64 concatenates cleanly."""
    data = bytes(range(256)) * 10_000
    wire = MediaWire()
    body = json.dumps({"d": wire.encode(PART, data)}).encode()
    found = wire.splice(body)
    assert found is not None
    chunks = list(wire.chunks(found[0]))
    assert len(chunks) > 3
    assert json.loads(b"".join(chunks))["d"] == base64.b64encode(data).decode()


def test_another_requests_placeholder_is_left_alone() -> None:
    """A placeholder made for one request (or typed into a prompt) is text to another."""
    first, second = MediaWire(), MediaWire()
    foreign = first.encode(PART, b"secret bytes")
    second.encode(PART, b"mine")
    body = json.dumps({"text": foreign}).encode()
    assert second.splice(body) is None
    assert second.inline({"text": foreign}) == {"text": foreign}


def test_without_media_nothing_changes() -> None:
    """An empty wire hands the parameters through and never touches the client."""
    params: dict[str, list[str]] = {"messages": []}
    with MediaWire().sending(object(), params) as sent:
        assert sent is params


def test_a_client_without_an_http_client_gets_the_base64_inline() -> None:
    """The fallback for an SDK double: placeholders replaced in the parameters."""
    wire = MediaWire()
    params = {"data": wire.encode(PART, b"abc")}
    assert not install_hook(object())
    with wire.sending(object(), params) as sent:
        assert sent == {"data": base64.b64encode(b"abc").decode()}
