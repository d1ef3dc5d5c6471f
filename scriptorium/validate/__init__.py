"""Output validation: verdicts, the validator port, the schema validator and the JSON parsers."""

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr
from scriptorium.validate.model import (
    LoadedSchema,
    OutputContract,
    ValidationIssue,
    ValidationResult,
)
from scriptorium.validate.validator import Validator

if TYPE_CHECKING:
    from scriptorium.validate.schema.validator import SchemaValidator

__all__ = [
    "LoadedSchema",
    "OutputContract",
    "SchemaValidator",
    "ValidationIssue",
    "ValidationResult",
    "Validator",
]

__getattr__ = lazy_getattr(__name__, {"SchemaValidator": "schema.validator"})
