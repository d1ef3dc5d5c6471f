"""parse_lenient: valid JSON untouched; unambiguous slips recovered and named; the rest refused."""

from __future__ import annotations

from typing import Any

import pytest

from scriptorium.validate.parse import parse_lenient


def test_valid_json_passes_through_unchanged_with_no_fixes() -> None:
    """Strict JSON is never altered: same value, empty fixes, mode strict."""
    outcome = parse_lenient('{"a": "x // not a comment", "b": [1,2]}')
    assert outcome.ok
    assert outcome.value == {"a": "x // not a comment", "b": [1, 2]}
    assert outcome.fixes == ()
    assert outcome.mode == "strict"


def test_recovered_values_report_mode_lenient() -> None:
    """When recovery was needed, the outcome says so."""
    assert parse_lenient("{'a': 1}").mode == "lenient"
    assert parse_lenient("{'a': ").mode == "lenient"


@pytest.mark.parametrize(
    ("text", "fix"),
    [
        ('```json\n{"a": 1}\n```', "stripped_code_fence"),
        ('Here: {"a": 1}', "extracted_from_prose"),
        ('{"a": 1,}', "removed_trailing_comma"),
        ('{"a": 1 // c\n}', "removed_comment"),
        ("{'a': 1}", "single_quotes"),
        ("{“a”: 1}", "smart_quotes"),
        ('{"a": None}', "python_literal"),
        ("{a: 1}", "unquoted_key"),
        ('\ufeff{"a": 1}', "stripped_bom"),
        ('{"a": "x\ty"}', "escaped_control_char"),
        ('{"a":\u00a01}', "nonstandard_whitespace"),
    ],
)
def test_each_recovery_is_recorded_as_a_fix(text: str, fix: str) -> None:
    """Every kind of repair names itself in fixes."""
    outcome = parse_lenient(text)
    assert outcome.ok, outcome.issues
    assert fix in outcome.fixes


def test_fixes_are_listed_once_in_a_stable_order() -> None:
    """Location fixes first, then syntax fixes in the order met; no duplicates."""
    outcome = parse_lenient("Sure:\n```json\n{'a': 1, 'b': 2,}\n```")
    assert outcome.fixes == (
        "stripped_code_fence",
        "extracted_from_prose",
        "single_quotes",
        "removed_trailing_comma",
    )


def test_schema_check_breaks_ties_between_candidates() -> None:
    """Of two candidate objects, the one the schema accepts is chosen."""
    text = '{"kind": "example"}\n{"kind": "answer", "n": 1}'
    outcome = parse_lenient(text, schema_check=lambda v: "n" in v)
    assert outcome.value == {"kind": "answer", "n": 1}


def test_schema_check_accepting_none_leaves_the_ambiguity() -> None:
    """When the schema accepts no candidate, they all stay, and differing ones are ambiguous."""
    outcome = parse_lenient('{"a": 1} {"a": 2}', schema_check=lambda v: False)
    assert not outcome.ok
    assert outcome.issues[0].keyword == "ambiguous"


def test_a_clean_candidate_beats_repaired_ones_before_the_schema_is_asked() -> None:
    """Parsing without syntax fixes outranks the schema (the documented order)."""
    calls: list[Any] = []

    def check(value: Any) -> bool:
        calls.append(value)
        return True

    outcome = parse_lenient("{'a': 1} and {\"a\": 2}", schema_check=check)
    assert outcome.value == {"a": 2}
    assert calls == []


def test_equal_candidates_are_one_answer_but_1_and_1_point_0_differ() -> None:
    """Candidates are compared as JSON, so key order does not matter and types do."""
    assert parse_lenient('{"a": 1, "b": 2} {"b": 2, "a": 1}').ok
    assert not parse_lenient('{"a": 1} {"a": 1.0}').ok


def test_truncated_values_are_never_closed_up() -> None:
    """A value cut off at the end is an issue, even when an earlier complete value exists."""
    for text in ['{"a": [1, 2', '{"a": 1} then {"a": 2, "b": "x', "```json\n[1, 2,"]:
        outcome = parse_lenient(text)
        assert not outcome.ok
        assert outcome.issues[0].keyword == "truncated"


def test_missing_commas_are_refused_rather_than_guessed() -> None:
    """[1 2] could mean [12] or [1, 2]: it is a parse issue."""
    outcome = parse_lenient("[1 2]")
    assert not outcome.ok
    assert outcome.issues[0].keyword == "parse"


@pytest.mark.parametrize(
    ("text", "keyword"),
    [
        ('{"a": NaN}', "non_finite"),
        ("[" * 70 + "]" * 70, "depth"),
        ("x" * 50, "size"),
        ("{'a': " * 70 + "1" + "}" * 70, "depth"),
    ],
)
def test_bounds_hold_in_lenient_mode_too(text: str, keyword: str) -> None:
    """Non-finite numbers, depth and size are issues no repair hides."""
    outcome = parse_lenient(text, max_chars=40 if keyword == "size" else 4_000_000)
    assert not outcome.ok
    assert outcome.issues[0].keyword == keyword


def test_scalars_are_recovered_only_when_they_are_the_whole_text() -> None:
    """'True' alone is a value; a number in prose is not a candidate."""
    assert parse_lenient("True").value is True
    assert parse_lenient("'hi'").value == "hi"
    assert not parse_lenient("The answer is 42.").ok


def test_prose_brackets_hide_nothing_inside_them() -> None:
    """A value inside a bracket that does not parse is not taken for the answer."""
    outcome = parse_lenient('[..., {"a": 1}]')
    assert not outcome.ok


def test_exceptions_from_schema_check_propagate() -> None:
    """A broken schema check is the caller's failure, not a content verdict."""

    def broken(value: Any) -> bool:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        parse_lenient('{"a": 1} {"a": 2}', schema_check=broken)


def test_non_text_input_is_an_issue_not_an_exception() -> None:
    """Even a wrongly typed argument yields an outcome."""
    outcome = parse_lenient(b"{}")  # type: ignore[arg-type]
    assert not outcome.ok
