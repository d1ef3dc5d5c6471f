"""Messages as each provider's content blocks: the one place a message with media becomes the list
of dicts an API takes (text blocks, images, documents).

- Anthropic: text -> ``{"type": "text", "text"}``; an image -> ``{"type": "image", "source":
  {"type": "base64", "media_type", "data"}}``; a PDF -> ``{"type": "document", "source": {"type":
  "base64", "media_type": "application/pdf", "data"}, "title": <artifact name>}``.
- OpenAI Chat Completions: text -> ``{"type": "text", "text"}``; an image -> ``{"type":
  "image_url", "image_url": {"url": "data:<type>;base64,<data>"}}``; a PDF -> ``{"type": "file",
  "file": {"filename": <artifact name>, "file_data": "data:application/pdf;base64,<data>"}}``.

A text-only message stays a plain string. Blocks are built fresh per request as plain dicts, so a
later step (prompt caching) can mark one without touching shared state. The base64 text comes from
``encode``: by default the real encoding; :mod:`scriptorium.llm.media_wire` swaps in a placeholder
that is spliced into the body as it is sent, so the encoded file is never held as a string.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

from scriptorium.artifact.media import PDF_TYPE, base_type
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import LLMRequest
from scriptorium.prompt.model import MediaPart, Message, TextPart

__all__ = [
    "Encoder",
    "anthropic_content",
    "anthropic_messages",
    "b64_text",
    "openai_content",
    "openai_messages",
]

#: ``encode(part, data)`` -> the base64 text the block carries for ``data``.
Encoder = Callable[[MediaPart, bytes], str]


def b64_text(part: MediaPart, data: bytes) -> str:
    """The standard base64 of ``data``, as text."""
    return base64.b64encode(data).decode("ascii")


def _data(part: MediaPart, media: Mapping[str, bytes], provider: str) -> bytes:
    data = media.get(part.sha256)
    if data is None:
        # A request built by hand (or read back from JSON, where bytes are never written).
        raise LLMGenerateError(
            f"{provider}: the bytes of media part {part.name!r} are not in the request",
            reason="invalid_request",
            retryable=False,
            provider=provider,
        )
    return data


def anthropic_content(
    message: Message, media: Mapping[str, bytes], encode: Encoder = b64_text
) -> str | list[dict[str, Any]]:
    """One message's ``content`` for the Messages API."""
    content = message.content
    if isinstance(content, str):
        return content
    blocks: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
            continue
        media_type = base_type(part.media_type)
        source = {
            "type": "base64",
            "media_type": media_type,
            "data": encode(part, _data(part, media, "anthropic")),
        }
        if media_type == PDF_TYPE:
            blocks.append({"type": "document", "source": source, "title": part.name})
        else:
            blocks.append({"type": "image", "source": source})
    return blocks


def anthropic_messages(request: LLMRequest, encode: Encoder = b64_text) -> list[dict[str, Any]]:
    """The request's messages for the Messages API."""
    return [
        {"role": m.role, "content": anthropic_content(m, request.media, encode)}
        for m in request.messages
    ]


def openai_content(
    message: Message, media: Mapping[str, bytes], encode: Encoder = b64_text
) -> str | list[dict[str, Any]]:
    """One message's ``content`` for Chat Completions."""
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
            continue
        media_type = base_type(part.media_type)
        url = f"data:{media_type};base64,{encode(part, _data(part, media, 'openai'))}"
        if media_type == PDF_TYPE:
            parts.append({"type": "file", "file": {"filename": part.name, "file_data": url}})
        else:
            parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def openai_messages(request: LLMRequest, encode: Encoder = b64_text) -> list[dict[str, Any]]:
    """The request's messages for Chat Completions (the system message is the caller's)."""
    return [
        {"role": m.role, "content": openai_content(m, request.media, encode)}
        for m in request.messages
    ]
