"""Judging one run's result against a case's expectations (all but the judge, which needs a run
of its own): pure functions, each failure naming the expectation, what it wanted and what it saw.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scriptorium.evals.model import Expect
from scriptorium.evals.report import ExpectationFailure
from scriptorium.validate.schema.patterns import search

if TYPE_CHECKING:
    from scriptorium.usecase.model import RunResult

__all__ = [
    "MAX_SHOWN_CHARS",
    "check_result",
    "deep_subset",
    "json_equal",
    "resolve_pointer",
    "shown_text",
]

#: The longest output text a failure repeats (the rest is cut, saying so).
MAX_SHOWN_CHARS = 2000
_MISSING = object()


def shown_text(text: str) -> str:
    """``text`` as a failure shows it: cut at :data:`MAX_SHOWN_CHARS`, saying so."""
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return text[:MAX_SHOWN_CHARS] + f"... ({len(text) - MAX_SHOWN_CHARS} more characters)"


def json_equal(expected: Any, seen: Any) -> bool:
    """Equality of JSON values as JSON means it: ``1 == 1.0``, but ``true`` is not ``1`` and
    ``"1"`` is not ``1``; objects by their keys, arrays in order."""
    if isinstance(expected, bool) or isinstance(seen, bool):
        return isinstance(expected, bool) and isinstance(seen, bool) and expected == seen
    if _is_number(expected) or _is_number(seen):
        return _is_number(expected) and _is_number(seen) and bool(expected == seen)
    if isinstance(expected, dict):
        return (
            isinstance(seen, dict)
            and expected.keys() == seen.keys()
            and all(json_equal(v, seen[k]) for k, v in expected.items())
        )
    if isinstance(expected, list | tuple):
        return (
            isinstance(seen, list | tuple)
            and len(expected) == len(seen)
            and all(json_equal(a, b) for a, b in zip(expected, seen, strict=True))
        )
    return type(expected) is type(seen) and bool(expected == seen)


def deep_subset(expected: Any, seen: Any) -> bool:
    """Whether ``seen`` contains ``expected``: every key of an expected object is in the seen one
    with a value that contains the expected value (other keys may be there too); an expected
    array matches an array of the same length item by item; anything else is :func:`json_equal`.
    """
    if isinstance(expected, dict):
        return isinstance(seen, dict) and all(
            key in seen and deep_subset(value, seen[key]) for key, value in expected.items()
        )
    if isinstance(expected, list | tuple):
        return (
            isinstance(seen, list | tuple)
            and len(expected) == len(seen)
            and all(deep_subset(a, b) for a, b in zip(expected, seen, strict=True))
        )
    return json_equal(expected, seen)


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value at a JSON Pointer (RFC 6901) in ``document``; ``KeyError`` naming the first
    token that leads nowhere. ``""`` is the whole document; ``~1`` is ``/`` and ``~0`` ``~``."""
    if pointer == "":
        return document
    current = document
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, dict):
            if token not in current:
                raise KeyError(token)
            current = current[token]
        elif isinstance(current, list):
            if not token.isdigit() or (token != "0" and token.startswith("0")):
                raise KeyError(token)
            index = int(token)
            if index >= len(current):
                raise KeyError(token)
            current = current[index]
        else:
            raise KeyError(token)
    return current


def check_result(expect: Expect, result: RunResult) -> list[ExpectationFailure]:
    """Every expectation of ``expect`` (but ``judge``) that ``result`` does not meet, in the
    order the keys are documented."""
    failures: list[ExpectationFailure] = []
    validation = result.validation
    text = result.output.text
    if expect.valid is not None and validation.valid != expect.valid:
        failures.append(
            ExpectationFailure(
                expectation="valid",
                expected=expect.valid,
                seen=validation.valid,
                message=_validity(
                    validation.valid,
                    [f"{i.path or '/'}: {i.message}" for i in validation.issues],
                ),
            )
        )
    failures.extend(_value_failures(expect, result))
    for needle in expect.contains or ():
        if needle not in text:
            failures.append(
                _text_failure("contains", needle, text, "the output does not contain it")
            )
    for needle in expect.not_contains or ():
        if needle in text:
            failures.append(_text_failure("not_contains", needle, text, "the output contains it"))
    for pattern in expect.regex or ():
        if not search(pattern, text):
            failures.append(_text_failure("regex", pattern, text, "no match in the output"))
    usage = result.usage
    limits = (
        ("max_cost_micro", expect.max_cost_micro, usage.cost_micro, "micro-USD"),
        ("max_latency_ms", expect.max_latency_ms, result.duration_ms, "ms"),
        ("max_output_tokens", expect.max_output_tokens, usage.output_tokens, "tokens"),
    )
    for name, limit, seen, unit in limits:
        if limit is not None and seen > limit:
            failures.append(
                ExpectationFailure(
                    expectation=name,
                    expected=limit,
                    seen=seen,
                    message=f"{seen:g} {unit} is over the limit of {limit:g}",
                )
            )
    return failures


def _value_failures(expect: Expect, result: RunResult) -> list[ExpectationFailure]:
    if not expect.checks_value():
        return []
    validation = result.validation
    if validation.format == "text":
        return [
            ExpectationFailure(
                expectation="value" if expect.expects_value else "pointer",
                expected=expect.value if expect.expects_value else expect.pointer,
                message="the prompt's output format is text: there is no parsed value",
            )
        ]
    value = validation.value if validation.valid else _MISSING
    if value is _MISSING:
        return [
            ExpectationFailure(
                expectation="value" if expect.expects_value else "pointer",
                expected=expect.value if expect.expects_value else expect.pointer,
                seen=shown_text(result.output.text),
                message="the output is not valid, so it has no parsed value (seen: its text)",
            )
        ]
    failures: list[ExpectationFailure] = []
    if expect.expects_value and not deep_subset(expect.value, value):
        failures.append(
            ExpectationFailure(
                expectation="value",
                expected=expect.value,
                seen=value,
                message="the parsed value does not contain the expected one",
            )
        )
    for pointer, wanted in (expect.pointer or {}).items():
        try:
            found = resolve_pointer(value, pointer)
        except KeyError:
            failures.append(
                ExpectationFailure(
                    expectation=f"pointer {pointer}",
                    expected=wanted,
                    seen=None,
                    message=f"the parsed value has nothing at {pointer}",
                )
            )
            continue
        if not json_equal(wanted, found):
            failures.append(
                ExpectationFailure(
                    expectation=f"pointer {pointer}",
                    expected=wanted,
                    seen=found,
                    message=f"the value at {pointer} is not the expected one",
                )
            )
    return failures


def _text_failure(name: str, expected: str, text: str, why: str) -> ExpectationFailure:
    return ExpectationFailure(
        expectation=name, expected=expected, seen=shown_text(text), message=why
    )


def _validity(valid: bool, issues: list[str]) -> str:
    if valid:
        return "the output is valid, but the case expects it not to be"
    shown = "; ".join(issues[:3]) + ("; ..." if len(issues) > 3 else "")
    return "the output is not valid" + (f": {shown}" if shown else "")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
