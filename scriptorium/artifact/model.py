"""Artifacts: files a prompt reads (documents, data), carried with their size, type and digest."""

from __future__ import annotations

import base64
import binascii
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

__all__ = [
    "Artifact",
    "ArtifactContent",
    "ArtifactSource",
    "BinaryTextError",
    "BinaryView",
    "is_textual",
]

#: Where an artifact came from: a file under the artifact root, or content given by value.
ArtifactSource = Literal["file", "value"]


def is_textual(media_type: str) -> bool:
    """Whether content of ``media_type`` is decoded to text for templates."""
    base = media_type.split(";", 1)[0].strip().lower()
    return (
        base.startswith("text/")
        or base in ("application/json", "application/xml", "application/yaml", "application/toml")
        or base.endswith(("+json", "+xml"))
    )


class BinaryTextError(Exception):
    """Raised inside a template that reads ``.text`` of a binary artifact; the renderer turns it
    into a ``PromptRenderError`` naming the section (a binary artifact has no text to show, and
    printing ``None`` instead would send the model a prompt without its document)."""


class BinaryView(dict[str, Any]):
    """``artifacts.<name>`` of a binary artifact: the fields of a text artifact's view except
    ``text``, which raises :class:`BinaryTextError` instead of being missing or ``None``."""

    def __missing__(self, key: str) -> Any:
        if key == "text":
            raise BinaryTextError(
                f"artifact {self.get('name')!r} is {self.get('media_type')}, which has no text; "
                + (
                    f"place it with {{{{ artifacts.{self.get('name')}.block }}}}"
                    if "block" in self
                    else "declare a text media type for it"
                )
            )
        raise KeyError(key)


class Artifact(BaseModel):
    """One artifact as read: raw bytes, text when textual, and what templates may see of it."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    name: str
    ref: str
    media_type: str
    size: int = Field(ge=0)
    sha256: str
    data: bytes = Field(repr=False)
    text: str | None = Field(default=None, repr=False)
    source: ArtifactSource = "file"

    def template_view(self) -> dict[str, Any]:
        """What ``artifacts.<name>`` shows inside a template (``text`` raises for binary content:
        :class:`BinaryView`)."""
        if self.text is None:
            return BinaryView(
                name=self.name, media_type=self.media_type, size=self.size, sha256=self.sha256
            )
        return {
            "text": self.text,
            "name": self.name,
            "media_type": self.media_type,
            "size": self.size,
            "sha256": self.sha256,
        }

    def summary(self) -> dict[str, Any]:
        """The record kept in ``PreparedRun.artifacts`` (no content)."""
        return {
            "name": self.name,
            "ref": self.ref,
            "media_type": self.media_type,
            "size": self.size,
            "sha256": self.sha256,
            "source": self.source,
        }


class ArtifactContent(BaseModel):
    """An artifact given by value instead of by reference: the content itself.

        ArtifactContent("plain text")                                  # text, UTF-8
        ArtifactContent(png_bytes, media_type="image/png", filename="scan.png")

    It goes through the same checks as a file (declared media type, ``max_bytes``, text decoding)
    and hashes the same way (sha256 of the bytes; ``str`` data is hashed as its UTF-8 encoding).
    ``media_type`` wins when given; otherwise ``filename``'s extension decides, as a path's would.

    In JSON (kernel payloads, batch lines, HTTP bodies) it is ``{"text": "..."}`` or
    ``{"base64": "...", "media_type": "image/png", "filename": "scan.png"}``; both forms are
    accepted by validation and produced by ``model_dump``/``model_dump_json``.
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    data: bytes | str = Field(repr=False)
    media_type: str | None = Field(default=None, min_length=3, max_length=255)
    filename: str | None = Field(default=None, min_length=1, max_length=255)

    def __init__(
        self,
        data: bytes | str | None = None,
        media_type: str | None = None,
        filename: str | None = None,
        **fields: Any,
    ) -> None:
        if data is not None:
            fields["data"] = data
        if media_type is not None:
            fields["media_type"] = media_type
        if filename is not None:
            fields["filename"] = filename
        super().__init__(**fields)

    @model_validator(mode="before")
    @classmethod
    def _json_forms(cls, value: Any) -> Any:
        """Accept the JSON forms: ``{"text": ...}`` and ``{"base64": ...}`` (one of the two)."""
        if not isinstance(value, dict) or "data" in value:
            return value
        has_text, has_b64 = "text" in value, "base64" in value
        if has_text and has_b64:
            raise ValueError("give either 'text' or 'base64', not both")
        if not (has_text or has_b64):
            raise ValueError("artifact content needs 'text' or 'base64'")
        rest = {k: v for k, v in value.items() if k not in ("text", "base64")}
        if has_text:
            if not isinstance(value["text"], str):
                raise ValueError("'text' must be a string")
            return {**rest, "data": value["text"]}
        encoded = value["base64"]
        if not isinstance(encoded, str):
            raise ValueError("'base64' must be a string")
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError) as err:
            raise ValueError("'base64' is not valid base64") from err
        return {**rest, "data": data}

    @model_serializer(mode="plain")
    def _serialize(self) -> dict[str, Any]:
        out: dict[str, Any]
        if isinstance(self.data, str):
            out = {"text": self.data}
        else:
            out = {"base64": base64.b64encode(self.data).decode("ascii")}
        if self.media_type is not None:
            out["media_type"] = self.media_type
        if self.filename is not None:
            out["filename"] = self.filename
        return out

    @property
    def content(self) -> bytes:
        """The bytes (``str`` data encoded as UTF-8)."""
        return self.data.encode("utf-8") if isinstance(self.data, str) else self.data
