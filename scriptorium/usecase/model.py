"""Requests and results of the use case: what callers send, what prepare and run give back."""

from __future__ import annotations

from datetime import datetime
from pathlib import PurePath
from typing import Annotated, Any, Literal, TypeVar, cast

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    TypeAdapter,
    field_validator,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError

from scriptorium._nulls import absent_when_null
from scriptorium.artifact.model import ArtifactContent, ArtifactSource
from scriptorium.errors import OutputInvalidError, describe
from scriptorium.llm.model import APIKey, CacheDirectives, Target, Usage, given_key, is_none
from scriptorium.llm.reasoning import ReasoningPlan
from scriptorium.profile.model import ExecutionSettings, SettingsPatch
from scriptorium.prompt.model import Message
from scriptorium.validate.model import OutputContract, ValidationIssue, ValidationResult

__all__ = [
    "ArtifactRecord",
    "AttemptRecord",
    "FallbackRecord",
    "OutputRecord",
    "Overrides",
    "PreparedRun",
    "RunRequest",
    "RunResult",
]

SettingSource = Literal["default", "profile", "override"]
#: Request fields for which JSON null means the field was not given.
_ABSENT_WHEN_NULL = ("inputs", "artifacts", "overrides", "metadata")
T = TypeVar("T")


def _blank_is_none(value: Any) -> Any:
    # Anything but text is left for the field's own validation to refuse.
    return given_key(value) if isinstance(value, str | SecretStr) else value


#: A request's key: an empty or blank one is no key (None), so nothing downstream can take ``""``
#: for "no key" in one place and for "a key" in another. Whether a given key is long enough to be
#: one is the credential step's to say (``usecase.prepare.credential``), where the refusal is a
#: sentinel that never quotes the value.
RequestKey = Annotated[APIKey | None, BeforeValidator(_blank_is_none)]


class Overrides(SettingsPatch):
    """Per-request overrides: every setting a profile may state (``reasoning`` and
    ``reasoning_budget_tokens`` included), plus the model, the endpoint and the number of
    repairs. ``None`` means "not given", so an explicit ``0``/``0.0`` always wins."""

    model: str | None = Field(default=None, min_length=1, max_length=200)
    endpoint: str | None = None
    repair_attempts: int | None = Field(default=None, ge=0, le=5)


class RunRequest(BaseModel):
    """One run: which prompt, with what, where. ``api_key`` reaches the LLM boundary only.

    ``artifacts`` maps each artifact name to a reference (a path under the artifact root) or to
    the content itself (:class:`~scriptorium.ArtifactContent`; in JSON ``{"text": ...}`` or
    ``{"base64": ..., "media_type": ..., "filename": ...}``).
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    prompt_id: str
    profile: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    artifacts: dict[str, str | ArtifactContent] = Field(default_factory=dict)
    overrides: Overrides = Overrides()
    api_key: RequestKey = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _nulls_are_absent(cls, data: Any) -> Any:
        # Generated OpenAPI clients send every optional field, as null when unset: null here
        # means "not given", for the library, the HTTP API and the kernel alike.
        return absent_when_null(data, _ABSENT_WHEN_NULL)

    @field_validator("artifacts", mode="before")
    @classmethod
    def _paths_as_references(cls, value: Any) -> Any:
        # A pathlib path is a reference like its text (the reader still confines it to the root).
        if isinstance(value, dict) and any(isinstance(v, PurePath) for v in value.values()):
            return {k: v.as_posix() if isinstance(v, PurePath) else v for k, v in value.items()}
        return value


class ArtifactRecord(BaseModel):
    """An artifact as prepared: where it came from and its digest, not its content.

    ``source`` is ``"file"`` for a reference read under the artifact root and ``"value"`` for
    content given in the request (its ``ref`` is then the content's filename, or empty).
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    name: str
    ref: str
    media_type: str
    size: int
    sha256: str
    source: ArtifactSource = "file"


class PreparedRun(BaseModel):
    """Everything about a run except the LLM call. Holds no key value, only the variable's name.

    ``system`` and ``messages`` are what the provider's adapter sends: for a structured output
    whose strategy puts the schema in the prompt, ``system`` includes those instructions.
    ``ignored_settings`` names the settings that have a value (shown in ``settings`` with their
    source) but that the provider does not take, so they are not sent. ``output.strategy`` is
    the structured-output strategy the provider's adapter will use (``auto`` resolved).
    ``reasoning`` is how the reasoning settings are sent to the model: the body members as
    sent, what is left out and why, and a level moved to the nearest one the model takes.
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    prompt_id: str
    prompt_version: int | str | None = None
    definition_hash: str
    profile: str
    profile_hash: str
    target: Target
    settings: ExecutionSettings
    settings_sources: dict[str, SettingSource]
    ignored_settings: tuple[str, ...] = ()
    output: OutputContract
    artifacts: tuple[ArtifactRecord, ...] = ()
    inputs_hash: str
    system: str | None = None
    messages: tuple[Message, ...] = ()
    session_id: str | None = None
    rendered_prompt_hash: str
    request_hash: str
    #: Prompt caching asked of the provider (None: off); not part of any hash.
    cache: CacheDirectives | None = None
    #: Schema keywords the provider's schema reduction leaves out of what it sends (the full
    #: schema is still validated locally), as the adapter will report them in
    #: ``RunResult.metadata["schema_dropped"]``.
    schema_dropped: tuple[str, ...] = ()
    #: How the reasoning settings go to the model, as its provider maps them (None: none was
    #: given, or the provider maps none).
    reasoning: ReasoningPlan | None = Field(default=None, exclude_if=is_none)
    #: Which of the provider's APIs the request travels on, where it has several (OpenAI's
    #: ``chat`` or ``responses``); None where it has one. Not part of any hash.
    api: str | None = Field(default=None, exclude_if=is_none)


class OutputRecord(BaseModel):
    """The final output text and its digest, and the reasoning the provider returned with it
    (None when none): never part of the text, the digest or validation."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    text: str
    sha256: str
    #: Left out of dumps when None, as every result field added since (see ``llm.model.is_none``).
    reasoning: str | None = Field(default=None, exclude_if=is_none)


class AttemptRecord(BaseModel):
    """One generation (initial or repair) and its verdict, with the profile it was made on and the
    provider and model that made it (a run that fell back holds generations of several)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    kind: Literal["initial", "repair"]
    text: str
    #: The reasoning the provider returned with this generation (None, left out of dumps, when
    #: none).
    reasoning: str | None = Field(default=None, exclude_if=is_none)
    finish_reason: str
    usage: Usage
    latency_ms: float
    valid: bool
    issues: tuple[ValidationIssue, ...] = ()
    profile: str | None = None
    provider: str | None = None
    model: str | None = None


class FallbackRecord(BaseModel):
    """A profile of the fallback chain that the run left, or skipped, before the one it ended on.

    ``code`` and ``reason`` say why: a failed call (``llm_generate`` and its reason), an output
    still invalid after this profile's repairs (``output_invalid`` / ``invalid_output``), a
    profile cooling down after it said "busy" (``cooldown`` / ``cooldown``), a profile that could
    not be prepared (that error's code; its ``reason`` when it has one, else the code), or a
    shared ``timeout_s`` budget used up before it was tried (``llm_generate`` / ``timeout``).
    ``attempts`` is every HTTP request made on it; ``usage`` what those requests used that no
    record of ``RunResult.attempts`` holds (the failed call's requests, in ``llm_calls``; its
    generations are in ``attempts``), so the result's usage is the sum of both lists.
    ``provider``, ``model`` and ``request_hash`` are None for a profile never prepared.
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    profile: str
    provider: str | None = None
    model: str | None = None
    request_hash: str | None = None
    code: str
    reason: str
    message: str
    attempts: int = Field(default=0, ge=0)
    usage: Usage = Usage()
    retry_after_s: float | None = None


class RunResult(BaseModel):
    """The outcome of a run. Invalid output is reported here; it does not raise.

    ``prepared`` is the run of the profile the result ends on (after a fallback, the one that
    answered); ``fallbacks`` the profiles of its chain left before it, in order; ``usage`` sums
    every generation of every profile and the failed calls of those left.

    ``metadata`` is what the provider adapter reported for the last generation: ``request_id``,
    the ``strategy`` used, ``ignored_settings``, ``service_tier``, a ``pricing`` note when the cost
    is 0 for want of a price (these five are always present, None when not reported; the list
    possibly empty), ``replayed`` for an answer from a cassette. It never holds a key.
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    run_id: str
    started_at: datetime
    finished_at: datetime
    duration_ms: float
    prepared: PreparedRun
    output: OutputRecord
    validation: ValidationResult
    attempts: tuple[AttemptRecord, ...]
    usage: Usage
    finish_reason: str
    model: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    fallbacks: tuple[FallbackRecord, ...] = ()

    def raise_for_validation(self) -> RunResult:
        """Raise ``OutputInvalidError`` when the output failed its contract; else return self."""
        if not self.validation.valid:
            issues = self.validation.issues
            # Every issue, each where it is (a JSON Pointer): the first alone hides the rest.
            listed = "; ".join(f"{i.path or '/'}: {i.message}" for i in issues[:20])
            more = f"; and {len(issues) - 20} more" if len(issues) > 20 else ""
            raise OutputInvalidError(
                f"output of {self.prepared.prompt_id!r} is invalid: {listed or 'invalid'}{more}",
                prompt_id=self.prepared.prompt_id,
                profile=self.prepared.profile,
                issues=[i.model_dump() for i in self.validation.issues],
            )
        return self

    def parsed(self, model_type: type[T]) -> T:
        """``validation.value`` validated as ``model_type`` (a pydantic model class, or any type
        pydantic can validate), typed outputs on top of the prompt's JSON Schema.

        Raises ``OutputInvalidError`` when the output is invalid, or when the model rejects it
        (the pydantic error kept as the cause).
        """
        self.raise_for_validation()
        value = self.validation.value
        try:
            if isinstance(model_type, type) and issubclass(model_type, BaseModel):
                return cast(T, model_type.model_validate(value))
            return TypeAdapter(model_type).validate_python(value)
        except PydanticValidationError as err:
            name = getattr(model_type, "__name__", repr(model_type))
            raise OutputInvalidError(
                f"output of {self.prepared.prompt_id!r} does not fit {name}: {describe(err)}",
                prompt_id=self.prepared.prompt_id,
                profile=self.prepared.profile,
                issues=[
                    {"path": _pointer(e["loc"]), "message": e["msg"], "keyword": e["type"]}
                    for e in err.errors(include_url=False, include_input=False)
                ],
            ) from err


def _pointer(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as a JSON Pointer (``("items", 0)`` -> ``/items/0``)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in loc)
