"""The port through which the use case loads schemas and validates outputs, and what makes one
validation heavy enough to leave an event loop for."""

from __future__ import annotations

from typing import Any, Protocol

from scriptorium.validate.model import LoadedSchema, OutputContract, ValidationResult

__all__ = ["OFFLOAD_CHARS", "Validator", "heavy_to_validate"]

#: Outputs longer than this (characters) are validated in a worker thread by async runs. Strict
#: JSON of this size parses in a fraction of a millisecond, but a lenient reading of a hostile text
#: costs about 1 ms per thousand characters and schema validation grows with the value, while a
#: thread hop costs about 0.1 ms, as much as a whole small run (``python -m bench.offload``):
#: below it, the loop keeps the work.
OFFLOAD_CHARS = 8_192


def heavy_to_validate(text: str) -> bool:
    """Whether validating ``text`` could hold an event loop long enough to matter."""
    return len(text) > OFFLOAD_CHARS


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
