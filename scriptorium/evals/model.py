"""Test files: ``prompts/<id>.tests.yaml``, the cases that run beside a prompt and what each
expects of the output. Plain data: every key is declared here and any other is refused."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from scriptorium.profile.model import PROFILE_NAME_PATTERN
from scriptorium.validate.schema.patterns import UnsafePattern, check

__all__ = [
    "MAX_REPEAT",
    "SUFFIX",
    "Case",
    "DatasetSpec",
    "Expect",
    "JudgeSpec",
    "TestsFile",
    "TextArtifact",
    "check_pointer",
]

#: A tests file's name ending: ``prompts/extract/contact.tests.yaml`` holds the cases of
#: ``extract/contact``.
SUFFIX = ".tests.yaml"
#: The most runs one case may ask for (a file's ``repeat`` or ``--repeat``).
MAX_REPEAT = 1000
_POINTER = re.compile(r"^(/([^~/]|~[01])*)*$")
_PROFILE = PROFILE_NAME_PATTERN.pattern


def check_pointer(pointer: str) -> str:
    """``pointer`` when it is a JSON Pointer (RFC 6901: empty, or ``/``-separated tokens where
    ``~`` is only ever ``~0`` or ``~1``); ``ValueError`` otherwise."""
    if not _POINTER.fullmatch(pointer):
        raise ValueError(
            "not a JSON Pointer (it is empty or starts with '/'; '~' inside a key is written ~0, "
            "'/' ~1)"
        )
    return pointer


def _texts(value: Any) -> Any:
    """One string or a list of strings, as a tuple (None stays None)."""
    if value is None or isinstance(value, list | tuple):
        return value
    return (value,)


class JudgeSpec(BaseModel):
    """An LLM grader: the bundled judge prompt asked, on ``profile``, whether the output meets
    ``rubric``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: str = Field(pattern=_PROFILE)
    rubric: str = Field(min_length=1, max_length=20_000)


class Expect(BaseModel):
    """What a case expects of one run's output. Every key is optional; a key left out checks
    nothing. ``contains``, ``not_contains`` and ``regex`` take one string or a list (each must
    hold)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: The output passes its contract (format, schema) — or, with ``false``, does not.
    valid: bool | None = None
    #: The parsed value contains this: objects by subset, arrays item by item, the rest equal.
    #: (``value: null`` expects the value null; a key left out expects nothing.)
    value: Any = None
    #: JSON Pointer -> the exact value found there.
    pointer: dict[str, Any] | None = None
    contains: tuple[str, ...] | None = None
    not_contains: tuple[str, ...] | None = None
    #: Searched in the output text, each with a linear-time engine (an unsafe pattern is refused).
    regex: tuple[str, ...] | None = None
    max_cost_micro: int | None = Field(default=None, ge=0)
    max_latency_ms: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    max_output_tokens: int | None = Field(default=None, ge=0)
    judge: JudgeSpec | None = None

    @field_validator("contains", "not_contains", "regex", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return _texts(value)

    @field_validator("contains", "not_contains", "regex")
    @classmethod
    def _not_empty(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and any(not text for text in value):
            raise ValueError("an empty string matches everything; leave it out")
        return value

    @field_validator("regex")
    @classmethod
    def _safe(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for pattern in value or ():
            try:
                re.compile(pattern)  # compiling alone is safe; matching is what can hang
                check(pattern)
            except UnsafePattern as err:
                raise ValueError(f"the pattern {err}") from None
            except re.error as err:
                raise ValueError(f"the pattern does not compile: {err}") from None
        return value

    @field_validator("pointer")
    @classmethod
    def _pointers(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        for pointer in value or {}:
            check_pointer(pointer)
        return value

    @property
    def expects_value(self) -> bool:
        """Whether ``value`` was given (``value: null`` included)."""
        return "value" in self.model_fields_set

    def checks_value(self) -> bool:
        """Whether any expectation reads the parsed value (``value`` or ``pointer``)."""
        return self.expects_value or bool(self.pointer)


class TextArtifact(BaseModel):
    """An artifact given by value in a tests file: ``{text: ...}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str


class Case(BaseModel):
    """One test case: the inputs and artifacts of a run, what it expects, and the share of its
    repeats that must pass."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    inputs: dict[str, Any] = Field(default_factory=dict)
    #: Artifact name -> a path relative to the tests file (inside the project), or ``{text: ...}``.
    artifacts: dict[str, str | TextArtifact] = Field(default_factory=dict)
    expect: Expect = Expect()
    min_pass_rate: float = Field(default=1.0, ge=0.0, le=1.0, allow_inf_nan=False)
    #: A case that must not regress: a new version failing it where the old one passed fails a
    #: comparison (``test --against``) or an optimisation, whatever the paired test says.
    must_pass: bool = False

    @field_validator("artifacts")
    @classmethod
    def _paths(cls, value: dict[str, str | TextArtifact]) -> dict[str, str | TextArtifact]:
        for name, ref in value.items():
            if isinstance(ref, str) and (not ref or "\x00" in ref):
                raise ValueError(f"artifact {name!r}: not a usable path")
        return value


_SHA256 = r"^[0-9a-fA-F]{64}$"
#: Where a dataset column may go (``inputs.<name>``, ``artifacts.<name>``, ``expect.pointer./p``
#: name the rest after the dot).
_TARGET = re.compile(
    r"^(inputs\.[^.].*|artifacts\.[^.].*|expect\.value|expect\.contains|expect\.pointer\..*)$"
)


class DatasetSpec(BaseModel):
    """Cases taken from a file beside the tests file: ``cases.jsonl`` (one JSON object a line) or
    ``cases.csv`` (a header row). Each row is a case named by its ``id`` column, else by its row
    number (from 1); ``map`` sends columns to ``inputs.<name>``, ``artifacts.<name>`` (as text),
    ``expect.value``, ``expect.contains`` or ``expect.pointer./path`` (every column but ``id``
    to ``inputs.<column>`` when there is no map); ``sample`` keeps N rows, chosen by ``seed``;
    ``sha256`` pins the file's content."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Relative to the tests file, inside the project.
    path: str = Field(min_length=1, max_length=1000)
    sha256: str | None = Field(default=None, pattern=_SHA256)
    map: dict[str, str] | None = None
    sample: int | None = Field(default=None, ge=1)
    seed: int = 0

    @field_validator("path")
    @classmethod
    def _format(cls, value: str) -> str:
        if "\x00" in value:
            raise ValueError("not a usable path")
        if not value.lower().endswith((".jsonl", ".csv")):
            raise ValueError("a dataset is a .jsonl or a .csv file")
        return value

    @field_validator("map")
    @classmethod
    def _targets(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for column, target in (value or {}).items():
            if not _TARGET.fullmatch(target):
                raise ValueError(
                    f"column {column!r}: {target!r} is not a target (inputs.<name>, "
                    "artifacts.<name>, expect.value, expect.contains, expect.pointer./path)"
                )
            if target.startswith("expect.pointer."):
                check_pointer(target.removeprefix("expect.pointer."))
        return value


class TestsFile(BaseModel):
    """A parsed ``<id>.tests.yaml``. ``prompt_id`` and ``source`` (the path under ``prompts/``)
    are set from the file's name, never by its content."""

    __test__ = False  # a pytest collecting a module that imports this is not to take it for tests
    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_id: str
    source: str
    #: The profile the cases run on when none is named (else the prompt's own).
    profile: str | None = Field(default=None, pattern=_PROFILE)
    #: Runs per case; the statistics are over repeats.
    repeat: int = Field(default=1, ge=1, le=MAX_REPEAT)
    cases: tuple[Case, ...] = ()
    #: More cases, from a file (read when the tests file is read from a project: its rows are
    #: then in ``cases`` after the inline ones).
    dataset: DatasetSpec | None = None

    @model_validator(mode="after")
    def _unique_names(self) -> TestsFile:
        # Not min_length: pydantic would report it too when a case is invalid, which misleads.
        if not self.cases and self.dataset is None:
            raise ValueError("a tests file needs at least one case (under 'cases' or a 'dataset')")
        seen: set[str] = set()
        for index, case in enumerate(self.cases):
            if case.name in seen:
                raise ValueError(f"cases[{index}]: another case has the same name")
            seen.add(case.name)
        return self

    def case(self, name: str) -> Case | None:
        """The case called ``name``, or None."""
        return next((case for case in self.cases if case.name == name), None)
