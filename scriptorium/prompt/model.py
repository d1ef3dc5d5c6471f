"""Rendered prompts: the messages a provider receives.

A message's content is text, or, when media (images, PDFs) are in it, a tuple of parts: text and
media in the order the template placed them. A :class:`MediaPart` names its artifact and carries
its type, digest and size, never its bytes: those travel beside the messages to the adapter only
(``LLMRequest.media``), so no result, hash, log or repr ever holds them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CachePoint",
    "Content",
    "MediaPart",
    "Message",
    "Part",
    "RenderedPrompt",
    "TextPart",
    "content_hash_form",
    "content_text",
]


class TextPart(BaseModel):
    """A run of text inside a message that also holds media."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["text"] = "text"
    text: str


class MediaPart(BaseModel):
    """An image or PDF placed in a message: which artifact, its media type, digest and size."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["media"] = "media"
    name: str
    media_type: str
    sha256: str
    size: int = Field(ge=0)


Part = Annotated[TextPart | MediaPart, Field(discriminator="type")]
#: A message's content: plain text, or text and media parts in order.
Content = str | tuple[Part, ...]


def content_hash_form(content: Content) -> str | list[dict[str, Any]]:
    """``content`` as hashed: text as is; a media part as ``{"type": "media", "media_type",
    "sha256", "size"}`` (no name, no bytes: the same file under another name is the same prompt)."""
    if isinstance(content, str):
        return content
    return [
        {"type": "text", "text": part.text}
        if isinstance(part, TextPart)
        else {
            "type": "media",
            "media_type": part.media_type,
            "sha256": part.sha256,
            "size": part.size,
        }
        for part in content
    ]


def content_text(content: Content) -> str:
    """The text of ``content`` for people, parts joined by blank lines; a media part shows as one
    bracketed line with its type, name, size and digest."""
    if isinstance(content, str):
        return content
    return "\n\n".join(
        part.text
        if isinstance(part, TextPart)
        else f"[media {part.name}: {part.media_type}, {part.size:,} bytes, {part.sha256}]"
        for part in content
    )


class Message(BaseModel):
    """One conversation turn: text, or text and media parts (:data:`Content`)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    role: Literal["user", "assistant"]
    content: Content

    def hash_form(self) -> dict[str, Any]:
        """``{"role", "content"}`` as hashed for ``rendered_prompt_hash`` and ``request_hash``."""
        content = self.content
        return {
            "role": self.role,
            "content": content if type(content) is str else content_hash_form(content),
        }

    @property
    def text(self) -> str:
        """The content as text for people (:func:`content_text`): media as one line each."""
        content = self.content
        return content if isinstance(content, str) else content_text(content)

    @property
    def media(self) -> tuple[MediaPart, ...]:
        """The media parts of this message, in order (empty for text)."""
        content = self.content
        if isinstance(content, str):
            return ()
        return tuple(p for p in content if isinstance(p, MediaPart))


class CachePoint(BaseModel):
    """Where a cached prefix ends: after ``offset`` characters of the system text
    (``message is None``), of message number ``message``, or of part ``part`` of that message;
    ``offset`` None means the end (of the part, or of the system text including anything the
    adapter appends to it). Not part of any hash."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    message: int | None = None
    #: For a message of text and media parts: the part the offset is in (None: plain text).
    part: int | None = None
    offset: int | None = None
    ttl: Literal["5m", "1h"] = "5m"


class RenderedPrompt(BaseModel):
    """The system prompt and messages after rendering, plus the rendered session id."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    system: str | None = None
    messages: tuple[Message, ...] = ()
    session_id: str | None = None
    #: Cache breakpoints (``cache: static`` / ``explicit`` prompts), in prompt order.
    cache_points: tuple[CachePoint, ...] = ()

    def hash_form(self) -> dict[str, Any]:
        """``{"system", "messages"}`` as hashed for ``rendered_prompt_hash``."""
        return {
            "system": self.system,
            "messages": [m.hash_form() for m in self.messages],
        }
