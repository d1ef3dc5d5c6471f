"""Where media go in a rendered prompt: ``{{ artifacts.<name>.block }}`` and the per-render nonce.

A template cannot produce a content part directly: it produces text. So ``.block`` renders a
marker holding a nonce drawn fresh for every render, and only after the sections are rendered
does :class:`MediaPlacement` cut each section's text at the markers carrying *this* render's
nonce and put a :class:`~scriptorium.prompt.model.MediaPart` there. An input or artifact text
cannot forge a marker: it would have to contain a nonce that did not exist when it was written,
and a marker copied out of an earlier render carries a dead nonce, so it stays text.

Media the template never places go at the start of the first user message, in the order the
artifacts come in (the runner reads them by name). Media belong in user turns only: a marker in the system prompt, an
assistant turn or the session id is a ``PromptRenderError``, as is a marker the template altered
(filtered, sliced) so that it no longer reads whole.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from typing import Any

from scriptorium.artifact.media import is_media
from scriptorium.artifact.model import Artifact
from scriptorium.errors import PromptRenderError
from scriptorium.prompt.model import MediaPart, Message, Part, TextPart

__all__ = ["MediaPlacement"]

_PREFIX = "[[scriptorium-media "


def media_part(artifact: Artifact) -> MediaPart:
    """The part a media artifact becomes."""
    return MediaPart(
        name=artifact.name,
        media_type=artifact.media_type,
        sha256=artifact.sha256,
        size=artifact.size,
    )


class MediaPlacement:
    """One render's media: the template views with ``block``, and the cutting of rendered text
    into parts. Build it with :meth:`for_artifacts`, which gives None when there are no media
    (a text-only prompt pays nothing)."""

    def __init__(self, media: Mapping[str, Artifact], prompt_id: str) -> None:
        self._nonce = secrets.token_hex(16)
        self._prompt_id = prompt_id
        self._names = list(media)
        self._parts = {name: media_part(artifact) for name, artifact in media.items()}
        self._marker = re.compile(re.escape(f"{_PREFIX}{self._nonce}:") + r"(\d{1,6})\]\]")
        self._placed: set[str] = set()

    @classmethod
    def for_artifacts(
        cls, artifacts: Mapping[str, Artifact], prompt_id: str
    ) -> MediaPlacement | None:
        """The placement for ``artifacts``' media, or None when none of them is media."""
        media = {n: a for n, a in artifacts.items() if is_media(a.media_type)}
        return cls(media, prompt_id) if media else None

    def view(self, artifact: Artifact) -> dict[str, Any]:
        """``artifacts.<name>`` for a template: the usual view, plus ``block`` for media."""
        view = artifact.template_view()
        if artifact.name in self._parts:
            index = self._names.index(artifact.name)
            view["block"] = f"{_PREFIX}{self._nonce}:{index}]]"
        return view

    def _holds_nonce(self, text: str) -> bool:
        # Case-blind: a block passed through ``upper`` must not slip out as text either.
        return self._nonce in text.lower()

    def text_only(self, text: str, where: str, label: str) -> str:
        """``text`` of a place media cannot go (system prompt, assistant turn, session id)."""
        if self._holds_nonce(text):
            raise PromptRenderError(
                f"{where} places a media artifact; images and PDFs go in user sections only",
                prompt_id=self._prompt_id,
                section=label,
            )
        return text

    def content(self, text: str, where: str, label: str) -> str | tuple[Part, ...]:
        """A user section's rendered text as content: the text itself when it places no media,
        else text and media parts in order (text around a block is stripped; empty text dropped)."""
        if not self._holds_nonce(text):
            return text
        parts: list[Part] = []
        start = 0
        for match in self._marker.finditer(text):
            self._text(parts, text[start : match.start()], where, label)
            index = int(match.group(1))
            if index >= len(self._names):
                raise self._altered(where, label)
            name = self._names[index]
            self._placed.add(name)
            parts.append(self._parts[name])
            start = match.end()
        self._text(parts, text[start:], where, label)
        return tuple(parts)

    def _text(self, parts: list[Part], text: str, where: str, label: str) -> None:
        if self._holds_nonce(text):
            raise self._altered(where, label)
        text = text.strip()
        if text:
            parts.append(TextPart(text=text))

    def _altered(self, where: str, label: str) -> PromptRenderError:
        return PromptRenderError(
            f"{where} changes a media block (filtered or cut it); print "
            "{{ artifacts.<name>.block }} as it is",
            prompt_id=self._prompt_id,
            section=label,
        )

    def complete(self, messages: list[Message]) -> list[Message]:
        """``messages`` with the media no template placed put first in the first user message
        (a user message of their own at the start when there is none)."""
        unplaced = [self._parts[n] for n in self._names if n not in self._placed]
        if not unplaced:
            return messages
        for i, message in enumerate(messages):
            if message.role == "user":
                content = message.content
                rest: tuple[Part, ...] = (
                    (TextPart(text=content),) if isinstance(content, str) else content
                )
                messages[i] = Message(role="user", content=(*unplaced, *rest))
                return messages
        return [Message(role="user", content=tuple(unplaced)), *messages]
