"""The port through which the use case loads schemas and validates outputs."""

from __future__ import annotations

from typing import Any, Protocol

from scriptorium.validate.model import LoadedSchema, OutputContract, ValidationResult

__all__ = ["Validator"]


class Validator(Protocol):
    """Checks model output against an output contract.

    ``load_schema`` resolves a reference (relative to the prompt file ``relative_to``, confined to
    the prompts root) or takes an inline document, then compiles it; any failure is
    ``ValidationError``. ``validate`` returns content failures in the result and raises
    ``ValidationError`` only when the validator itself breaks.
    """

    def load_schema(
        self, ref: str | dict[str, Any] | bool, *, relative_to: str | None = None
    ) -> LoadedSchema:
        """Load, check and compile a schema."""
        ...

    def validate(self, text: str, contract: OutputContract) -> ValidationResult:
        """The verdict on ``text`` under ``contract``."""
        ...
