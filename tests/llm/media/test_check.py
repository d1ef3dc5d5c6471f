"""Which provider takes which media, within which limits; and the block mapping's refusal of a
request whose bytes are missing."""

from __future__ import annotations

from typing import Any

import pytest

from scriptorium.errors import InvalidRequestError, LLMGenerateError
from scriptorium.llm.anthropic.api import MEDIA_LIMITS as ANTHROPIC_LIMITS
from scriptorium.llm.anthropic.body import anthropic_messages
from scriptorium.llm.media import MediaLimits, check_media
from scriptorium.llm.model import LLMRequest, Target
from scriptorium.llm.openai.api import MEDIA_LIMITS as OPENAI_LIMITS
from scriptorium.llm.openai.body import openai_messages
from scriptorium.llm.registry import Registry
from scriptorium.prompt.model import MediaPart, Message

REGISTRY = Registry()


def limits_for(provider: str, endpoint: str | None, options: dict[str, Any]) -> MediaLimits | None:
    """A target's media rules, as ``prepare`` asks its provider's spec (None: any media)."""
    spec = REGISTRY.find(provider)
    return None if spec is None else spec.media_limits(endpoint, options, None)


def test_limits_per_provider() -> None:
    """Anthropic and OpenAI have their limits; fake, replay and registered providers none."""
    assert limits_for("anthropic", "http://127.0.0.1:9/", {}) is ANTHROPIC_LIMITS
    assert ANTHROPIC_LIMITS.max_request_bytes == 32_000_000
    assert (ANTHROPIC_LIMITS.max_images, ANTHROPIC_LIMITS.max_pdf_pages) == (100, 100)
    assert ANTHROPIC_LIMITS.max_image_side == 8000
    assert limits_for("openai", None, {}) is OPENAI_LIMITS
    assert limits_for("openai", "https://api.openai.com/v1", {}) is OPENAI_LIMITS
    for provider in ("fake", "replay", "custom"):
        assert limits_for(provider, None, {}) is None


def test_an_openai_compatible_endpoint_takes_what_options_media_lists() -> None:
    """Nothing by default; the listed kinds otherwise; anything else is a request error."""
    local = "http://127.0.0.1:8080/v1"
    assert limits_for("openai", local, {}).kinds == frozenset()  # type: ignore[union-attr]
    only = limits_for("openai", local, {"media": ["image"]})
    assert only is not None
    assert only.kinds == frozenset({"image"})
    with pytest.raises(InvalidRequestError, match=r"options\.media"):
        limits_for("openai", local, {"media": ["audio"]})


PART = MediaPart(name="scan", media_type="image/png", sha256="sha256:00", size=3)


def test_missing_bytes_are_a_clean_adapter_error() -> None:
    """A request carrying parts without their bytes (built by hand, or read back from JSON)."""
    request = LLMRequest(
        target=Target(provider="anthropic", model="m"),
        messages=(Message(role="user", content=(PART,)),),
    )
    for build in (anthropic_messages, openai_messages):
        with pytest.raises(LLMGenerateError) as info:
            build(request)
        assert info.value.reason == "invalid_request"


def test_check_media_counts_each_placement() -> None:
    """The same image placed twice counts twice toward the image limit."""
    png = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000020000000208000000")
    part = PART.model_copy(update={"size": len(png), "sha256": "sha256:ab"})
    request = LLMRequest(
        target=Target(provider="anthropic", model="m"),
        messages=(Message(role="user", content=(part,) * 101),),
        media={"sha256:ab": png},
    )
    with pytest.raises(InvalidRequestError, match="101 images"):
        check_media(request, ANTHROPIC_LIMITS)
    check_media(
        request.model_copy(update={"messages": (Message(role="user", content=(part,)),)}),
        ANTHROPIC_LIMITS,
    )
