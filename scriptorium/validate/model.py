"""Validation verdicts and the output contract they are checked against."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["LoadedSchema", "OutputContract", "ValidationIssue", "ValidationResult"]


class ValidationIssue(BaseModel):
    """One way the output failed its contract. ``path`` is a JSON Pointer into the value."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    path: str = ""
    message: str
    keyword: str


class LoadedSchema(BaseModel):
    """A schema document loaded and compiled (``Validator.load_schema``)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    document: dict[str, Any] | bool
    hash: str
    #: Where it came from: a path relative to the prompts root, or ``None`` for an inline schema.
    source: str | None = None
    #: Other schema files its ``$ref``s reach (root-relative path -> document); empty when the
    #: schema is self-contained. ``hash`` covers them too, so editing one changes the hash.
    referenced: dict[str, Any] = Field(default_factory=dict)


class OutputContract(BaseModel):
    """The effective output contract of a run (``PreparedRun.output``)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)

    format: Literal["text", "json", "json_schema"] = "text"
    schema_: dict[str, Any] | bool | None = Field(default=None, alias="schema")
    schema_hash: str | None = None
    repair_attempts: int = Field(default=0, ge=0, le=5)
    strategy: Literal["auto", "native", "tool", "prompt"] = "auto"
    parse: Literal["strict", "lenient"] = "lenient"


class ValidationResult(BaseModel):
    """The content verdict on an output. Invalid output is a result, not an exception."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    valid: bool
    format: Literal["text", "json", "json_schema"] = "text"
    value: Any = None
    issues: tuple[ValidationIssue, ...] = ()
    #: Generations validated, repairs included (filled in by the runner).
    attempts: int = 1
    repaired: bool = False
    parse: Literal["strict", "lenient"] | None = None
    #: What the lenient parser changed to get a value (empty when the text was valid JSON).
    fixes: tuple[str, ...] = ()
