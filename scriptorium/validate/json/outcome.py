"""What a parser made of a text (shared by the strict and lenient parsers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from scriptorium.validate.model import ValidationIssue

__all__ = ["ParseOutcome", "failed", "issue"]


@dataclass(frozen=True, slots=True)
class ParseOutcome:
    """What a parser made of a text: ``value`` when ``ok``, else ``issues`` saying why not.

    ``fixes`` names what the lenient parser had to change (empty for valid JSON). ``mode`` says how
    the value was obtained: ``"strict"`` when the text was valid JSON (also under
    :func:`~.strict.parse_lenient`), ``"lenient"`` when recovery was needed or
    attempted and failed.
    """

    ok: bool
    value: Any = None
    mode: Literal["strict", "lenient"] = "strict"
    fixes: tuple[str, ...] = ()
    issues: tuple[ValidationIssue, ...] = ()


def issue(keyword: str, message: str) -> ValidationIssue:
    """An issue about the whole output (its path is the root)."""
    return ValidationIssue(path="", message=message, keyword=keyword)


def failed(problem: ValidationIssue) -> ParseOutcome:
    """A failed lenient outcome carrying ``problem``."""
    return ParseOutcome(False, None, "lenient", issues=(problem,))
