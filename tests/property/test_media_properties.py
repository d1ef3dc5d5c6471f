"""Any bytes, declared as any media type, prepared for a provider with limits: a PreparedRun or a
sentinel (ArtifactLoadError, InvalidRequestError), never another exception; and whatever passes
carries exactly one media part with the bytes' digest."""

from __future__ import annotations

import hashlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium._testing import media
from scriptorium.artifact.media import MEDIA_TYPES
from scriptorium.errors import ArtifactLoadError, InvalidRequestError
from scriptorium.prompt.jinja import JinjaRenderer
from scriptorium.testing import (
    FakeClient,
    MemoryArtifactReader,
    MemoryProfileRepository,
    MemoryPromptRepository,
)
from scriptorium.usecase import Runner, RunRequest
from scriptorium.validate.schema import SchemaValidator

HEADS = {
    "image/png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    "image/jpeg": b"\xff\xd8\xff",
    "image/gif": b"GIF89a",
    "image/webp": b"RIFF\x00\x00\x00\x00WEBPVP8X",
    "application/pdf": b"%PDF-1.7\n",
}


def _runner(data: bytes, media_type: str, provider: str) -> Runner:
    prompt = (
        f"---\nprofile: p\nartifacts:\n  f: {{media_type: {media_type}}}\n---\n"
        "## user\nLook: {{ artifacts.f.block }}\n"
    )
    profiles = {
        "anthropic": {"provider": "anthropic", "model": "m", "api_key_env": "K"},
        "openai": {"provider": "openai", "model": "m", "api_key_env": "K"},
        "fake": {"provider": "fake", "model": "m"},
    }
    return Runner(
        prompts=MemoryPromptRepository({"x": prompt}),
        profiles=MemoryProfileRepository({"p": profiles[provider]}),
        artifacts=MemoryArtifactReader({"f": data}),
        renderer=JinjaRenderer(),
        client=FakeClient(["ok"]),
        validator=SchemaValidator(),
        env={"K": "k-test-0001"},
    )


@settings(max_examples=120, deadline=None)
@given(
    media_type=st.sampled_from(sorted(MEDIA_TYPES)),
    head=st.sampled_from(["", *sorted(HEADS)]),
    width=st.integers(min_value=0, max_value=2**32 - 1),
    height=st.integers(min_value=0, max_value=2**32 - 1),
    tail=st.binary(max_size=80),
    provider=st.sampled_from(["anthropic", "openai", "fake"]),
)
def test_any_media_bytes_prepare_or_fail_with_a_sentinel(
    media_type: str, head: str, width: int, height: int, tail: bytes, provider: str
) -> None:
    data = (HEADS[head] if head else b"") + struct.pack(">II", width, height) + tail
    try:
        prepared = _runner(data, media_type, provider).prepare(
            RunRequest(prompt_id="x", artifacts={"f": "f"})
        )
    except (ArtifactLoadError, InvalidRequestError):
        return
    (message,) = prepared.messages
    (part,) = message.media
    assert part.sha256 == "sha256:" + hashlib.sha256(data).hexdigest()
    assert part.size == len(data)


@settings(max_examples=30, deadline=None)
@given(side=st.integers(min_value=1, max_value=12000))
def test_the_side_limit_is_exactly_8000_pixels(side: int) -> None:
    """An image is refused for Anthropic exactly when a side passes 8000."""
    runner = _runner(media.gif(side, 1), "image/gif", "anthropic")
    request = RunRequest(prompt_id="x", artifacts={"f": "f"})
    if side > 8000:
        with pytest.raises(InvalidRequestError, match=f"{side}x1 pixels"):
            runner.prepare(request)
    else:
        assert runner.prepare(request).messages[0].media
