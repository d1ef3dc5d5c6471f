"""Artifacts: files a prompt reads (documents, data), carried with their size, type and digest."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Artifact", "is_textual"]


def is_textual(media_type: str) -> bool:
    """Whether content of ``media_type`` is decoded to text for templates."""
    base = media_type.split(";", 1)[0].strip().lower()
    return (
        base.startswith("text/")
        or base in ("application/json", "application/xml", "application/yaml", "application/toml")
        or base.endswith(("+json", "+xml"))
    )


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
        """What ``artifacts.<name>`` shows inside a template."""
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
