"""parse_strict: json.loads with bounds; every failure is an issue, never an exception."""

from __future__ import annotations

import pytest

from scriptorium.validate.json.outcome import ParseOutcome
from scriptorium.validate.json.strict import parse_strict


def _keyword(outcome: ParseOutcome) -> str:
    assert not outcome.ok
    assert outcome.value is None
    assert len(outcome.issues) == 1
    assert outcome.issues[0].path == ""
    return outcome.issues[0].keyword


def test_valid_json_is_returned_as_is_with_no_fixes() -> None:
    """Valid JSON yields json.loads' value, mode strict, no fixes, no issues."""
    outcome = parse_strict('{"a": [1, 2.5, "x", null, true]}')
    assert outcome == ParseOutcome(True, {"a": [1, 2.5, "x", None, True]}, "strict")


@pytest.mark.parametrize("text", ["42", '"s"', "null", "[]"])
def test_any_json_value_is_accepted_at_the_root(text: str) -> None:
    """Scalars and empty containers are JSON too."""
    assert parse_strict(text).ok


@pytest.mark.parametrize(
    ("text", "keyword"),
    [
        ("not json", "parse"),
        ("", "parse"),
        ("{'a': 1}", "parse"),
        ('{"a": 1,}', "parse"),
        ('```json\n{"a": 1}\n```', "parse"),
        ('{"a": 1', "truncated"),
        ('["abc', "truncated"),
        ("NaN", "non_finite"),
        ('{"a": Infinity}', "non_finite"),
        ("[-Infinity]", "non_finite"),
        ("[1e400]", "non_finite"),
        ('"\\ud800"', "encoding"),
        ("1" * 5000, "parse"),
    ],
)
def test_failures_are_issues_with_stable_keywords(text: str, keyword: str) -> None:
    """Syntax errors, cut-off text, non-finite numbers and lone surrogates are issues."""
    assert _keyword(parse_strict(text)) == keyword


def test_nesting_deeper_than_the_limit_is_a_depth_issue() -> None:
    """65 levels fail, 64 pass (over-deep nesting is more than 64)."""
    assert parse_strict("[" * 64 + "]" * 64).ok
    assert _keyword(parse_strict("[" * 65 + "]" * 65)) == "depth"
    assert _keyword(parse_strict('{"a":' * 65 + "1" + "}" * 65)) == "depth"


def test_nesting_that_would_overflow_the_stack_is_a_depth_issue() -> None:
    """json.loads' RecursionError is caught, not raised."""
    assert _keyword(parse_strict("[" * 100_000 + "]" * 100_000)) == "depth"


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    """The cheap bracket count is only an upper bound; a real walk decides."""
    assert parse_strict(f'["{"[" * 200}"]').ok


def test_oversize_text_is_a_size_issue() -> None:
    """Text longer than max_chars is refused before parsing."""
    assert _keyword(parse_strict("[1, 2, 3]", max_chars=5)) == "size"


def test_paired_surrogate_escapes_are_fine() -> None:
    """Only a lone surrogate is refused; a pair is one character."""
    assert parse_strict('"\\ud83d\\ude00"').value == "\U0001f600"
