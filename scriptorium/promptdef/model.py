"""Prompt definitions: front matter (what a prompt needs and promises) plus role sections."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "PROMPT_ID_PATTERN",
    "ArtifactSpec",
    "CacheMark",
    "CacheSpec",
    "OutputSpec",
    "PromptDefinition",
    "Section",
    "is_valid_prompt_id",
]

PROMPT_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}(/[a-z0-9][a-z0-9_-]{0,63}){0,3}$")

Role = Literal["system", "user", "assistant"]
OutputFormat = Literal["text", "json", "json_schema"]
Strategy = Literal["auto", "native", "tool", "prompt"]
ParseMode = Literal["strict", "lenient"]
CacheMode = Literal["off", "static", "auto", "explicit"]
CacheTTL = Literal["5m", "1h"]


def is_valid_prompt_id(prompt_id: object) -> bool:
    """Whether ``prompt_id`` is a well-formed id (checked before any path is built from it)."""
    return isinstance(prompt_id, str) and PROMPT_ID_PATTERN.fullmatch(prompt_id) is not None


class ArtifactSpec(BaseModel):
    """What a prompt declares about one artifact it reads."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    required: bool = True
    media_type: str | None = Field(default=None, pattern=r"^[a-z*]+/[a-z0-9.+*-]+$")
    max_bytes: int | None = Field(default=None, ge=0, le=1 << 34)
    description: str | None = None
    #: The artifact is the same from run to run (a manual, a price list): with ``cache: static``
    #: it may sit inside the cached prefix.
    cache: bool = False


class OutputSpec(BaseModel):
    """The output contract as written: ``schema`` stays a reference (or an inline object) here."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)

    format: OutputFormat = "text"
    schema_: str | dict[str, Any] | None = Field(default=None, alias="schema")
    #: Used only when a repairer is present (``Engine(repair=True)``, ``--repair``).
    repair_attempts: int = Field(default=1, ge=0, le=5)
    strategy: Strategy = "auto"
    parse: ParseMode = "lenient"


class CacheSpec(BaseModel):
    """Front matter ``cache``: whether and how the prompt asks the provider to cache its prefix.

    ``off`` (the default), ``static`` (one breakpoint after the leading part no input reaches),
    ``auto`` (the provider's automatic caching) or ``explicit`` (``{# cache #}`` lines in the body).
    YAML reads an unquoted ``off`` as false; both mean off, and so does ``cache: off`` alone.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: CacheMode = "off"
    ttl: CacheTTL = "5m"

    @field_validator("mode", mode="before")
    @classmethod
    def _false_is_off(cls, value: Any) -> Any:
        return "off" if value is False else value


class CacheMark(BaseModel):
    """A ``{# cache #}`` line of a section: the cached block ends at ``offset`` characters into the
    section's template (the line itself removed). ``ttl`` is None for the prompt's default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    offset: int = Field(ge=0)
    ttl: CacheTTL | None = None


class Section(BaseModel):
    """One role section of the body, as template source (rendered on its own)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    role: Role
    template: str
    #: Cache breakpoint lines found when the body was split (removed from ``template``).
    cache_marks: tuple[CacheMark, ...] = ()


class PromptDefinition(BaseModel):
    """A parsed ``.prompt.md`` file."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    id: str
    #: A short human-readable name (what an MCP client shows for the prompt); optional.
    title: str | None = None
    description: str | None = None
    version: int | str | None = None
    profile: str | None = None
    inputs: dict[str, Any] | None = None
    artifacts: dict[str, ArtifactSpec] = Field(default_factory=dict)
    output: OutputSpec = OutputSpec()
    session_id: str | None = None
    cache: CacheSpec = CacheSpec()
    sections: tuple[Section, ...] = ()
    #: Path of the file relative to the prompts root (``extract/invoice.prompt.md``); the base for
    #: relative schema references.
    source: str | None = None

    @field_validator("cache", mode="before")
    @classmethod
    def _cache_shorthand(cls, value: Any) -> Any:
        if value is False or value == "off":
            return {"mode": "off"}
        if isinstance(value, str):
            return {"mode": value}
        return value

    def hash_form(self, schema_document: Any = None) -> dict[str, Any]:
        """The definition as hashed for ``definition_hash``: parsed front matter with the template
        sections and the loaded schema document inlined. ``source`` is not part of it."""
        data = self.model_dump(mode="json", by_alias=True, exclude={"source"})
        # Keys added later appear only when set, so prompts that never use them hash as they
        # always did.
        if self.title is None:
            del data["title"]
        if self.cache == CacheSpec():
            del data["cache"]
        for section in data["sections"]:
            if not section["cache_marks"]:
                del section["cache_marks"]
        for spec in data["artifacts"].values():
            if not spec["cache"]:
                del spec["cache"]
        if schema_document is not None:
            data["output"]["schema"] = schema_document
        return data
