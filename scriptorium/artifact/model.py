"""Artifacts: files a prompt reads (documents, data), carried with their size, type and digest."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Artifact", "BinaryTextError", "BinaryView", "is_textual"]


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

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    ref: str
    media_type: str
    size: int = Field(ge=0)
    sha256: str
    data: bytes = Field(repr=False)
    text: str | None = Field(default=None, repr=False)

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
        }
