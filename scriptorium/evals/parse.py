"""The ``.tests.yaml`` format: one YAML mapping read with the project's strict loader (no anchors,
tags or duplicate keys; plain JSON data), then checked key by key by :class:`TestsFile`."""

from __future__ import annotations

from pydantic import ValidationError as PydanticValidationError

from scriptorium._loading import (
    FormatProblem,
    describe_validation_error,
    load_yaml,
    model_keys,
    validation_messages,
)
from scriptorium.errors import PromptLoadError
from scriptorium.evals.model import TestsFile

__all__ = ["TESTS_KEYS", "parse_tests", "tests_file_problems"]

# Set from the file's name; a file that writes them is refused.
_DERIVED_KEYS = ("prompt_id", "source")
#: Every key a tests file may write, at any depth (for "did you mean").
TESTS_KEYS = frozenset(model_keys(TestsFile) - set(_DERIVED_KEYS))


def parse_tests(text: str, *, prompt_id: str, source: str) -> TestsFile:
    """The test cases in ``text`` (the content of ``source``, a path under ``prompts/``).

    ``PromptLoadError`` (``reason="invalid"``, ``path=source``) for YAML the strict loader refuses,
    anything but a mapping, an unknown key or a value out of its range; the message names the
    file and the key path, never a value.
    """

    def invalid(why: str) -> PromptLoadError:
        return PromptLoadError(
            f"tests file prompts/{source}: {why}",
            prompt_id=prompt_id,
            path=source,
            reason="invalid",
        )

    try:
        data = load_yaml(text.removeprefix("\ufeff"))
    except FormatProblem as err:
        raise invalid(str(err)) from err
    if not isinstance(data, dict):
        raise invalid("must be a mapping with a list of cases under 'cases'")
    derived = [key for key in _DERIVED_KEYS if key in data]
    if derived:
        raise invalid(f"unknown key {derived[0]!r} (set from the file's name)")
    try:
        return TestsFile.model_validate({**data, "prompt_id": prompt_id, "source": source})
    except PydanticValidationError as err:
        raise invalid(describe_validation_error(err, TESTS_KEYS)) from err


def tests_file_problems(err: PromptLoadError) -> list[str]:
    """Every problem of a tests file that :func:`parse_tests` refused, one message each (its
    error says the first few): what ``check`` reports, a line per mistake."""
    cause = err.__cause__
    if not isinstance(cause, PydanticValidationError):
        return [err.message]
    return [f"tests file prompts/{err.path}: {m}" for m in validation_messages(cause, TESTS_KEYS)]
