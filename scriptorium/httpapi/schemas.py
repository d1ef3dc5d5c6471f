"""The answers of the HTTP API that are not the library's own models, as pydantic models.

Routes build their answers from these, and the OpenAPI document is generated from their JSON
Schemas, so the document cannot drift from what is sent.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ErrorBody",
    "ErrorDetail",
    "Health",
    "OutputInvalidBody",
    "ProfileList",
    "ProfileSummary",
    "PromptDetail",
    "PromptList",
    "PromptOutput",
    "PromptSummary",
]


class ErrorDetail(BaseModel):
    """One failure: a stable ``code``, a message for people, the request id, whether trying again
    later may help, and the error's structured fields (which of them depends on the code)."""

    model_config = ConfigDict(extra="allow")

    code: str = Field(
        description="stable error code: invalid_request, prompt_load, llm_generate, ..."
    )
    message: str = Field(description="for people; never holds a key")
    request_id: str = Field(description="also in the X-Request-ID header and the access log")
    retryable: bool = Field(description="whether the same request may succeed later")
    reason: str | None = Field(default=None, description="the kind of failure, for some codes")
    field: str | None = Field(default=None, description="the request field at fault")
    env_var: str | None = Field(default=None, description="the key variable that is not set")
    retry_after_s: float | None = Field(
        default=None, description="how long the provider asked to wait"
    )
    http_status: int | None = Field(default=None, description="the provider's HTTP status")
    attempts: int | None = Field(default=None, description="HTTP requests made to the provider")
    elapsed_s: float | None = None
    provider: str | None = None
    model: str | None = None
    prompt_id: str | None = None
    profile: str | None = None
    path: str | None = Field(
        default=None, description="a file relative to the project or artifact root"
    )
    artifact: str | None = None
    section: str | None = None
    issues: list[dict[str, Any]] | None = Field(
        default=None, description="output_invalid: what failed validation"
    )
    fallbacks: list[dict[str, Any]] | None = Field(
        default=None,
        description="llm_generate after a fallback chain: each profile left before the last "
        "(as RunResult.fallbacks holds them)",
    )
    usage: dict[str, Any] | None = Field(
        default=None,
        description="llm_generate after a fallback chain: what every call of the run used",
    )


class ErrorBody(BaseModel):
    """The body of every error answer."""

    error: ErrorDetail


class OutputInvalidBody(BaseModel):
    """422 with ``?require_valid=true``: the error, and the whole RunResult it is about."""

    error: ErrorDetail
    result: dict[str, Any] = Field(description="the RunResult, exactly as a 200 would hold it")


class PromptSummary(BaseModel):
    """A prompt in the listing (only ``id`` and ``error`` when its file does not load)."""

    id: str
    description: str | None = None
    version: int | str | None = None
    profile: str | None = None
    output_format: Literal["text", "json", "json_schema"] | None = None
    error: dict[str, str] | None = Field(
        default=None, description="code and message, when the prompt's file does not load"
    )


class PromptList(BaseModel):
    """``GET /v1/prompts``."""

    prompts: list[PromptSummary]


class PromptOutput(BaseModel):
    """A prompt's output contract, its schema loaded (a file reference is replaced by the
    document)."""

    model_config = ConfigDict(populate_by_name=True)

    format: Literal["text", "json", "json_schema"]
    schema_: dict[str, Any] | bool | None = Field(default=None, alias="schema")
    repair_attempts: int
    strategy: str
    parse: str


class PromptDetail(BaseModel):
    """``GET /v1/prompts/{id}``: what a client needs to call the prompt, including the JSON Schema
    its ``inputs`` must satisfy."""

    id: str
    description: str | None = None
    version: int | str | None = None
    profile: str | None = None
    definition_hash: str
    inputs: dict[str, Any] | None = Field(
        default=None, description="the JSON Schema the request's inputs must satisfy"
    )
    artifacts: dict[str, dict[str, Any]] = Field(
        description="artifact name -> required, media_type, max_bytes, description"
    )
    output: PromptOutput


class ProfileSummary(BaseModel):
    """A profile in the listing: where it runs, never a key or a variable's value."""

    name: str
    provider: str | None = None
    model: str | None = None
    error: dict[str, str] | None = Field(
        default=None, description="code and message, when the profile's file does not load"
    )


class ProfileList(BaseModel):
    """``GET /v1/profiles``."""

    profiles: list[ProfileSummary]


class Health(BaseModel):
    """``GET /healthz``."""

    status: Literal["ok"] = "ok"
