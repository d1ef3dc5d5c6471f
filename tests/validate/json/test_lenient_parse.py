"""parse_lenient: valid JSON untouched; unambiguous slips recovered and named; the rest refused."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scriptorium.validate.json import lenient, tolerant
from scriptorium.validate.json.lenient import FIXES
from scriptorium.validate.json.strict import parse_lenient


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


# One example per fix; the last ones are only ever a schema's choice between readings.
FIX_EXAMPLES: list[tuple[str, str, Callable[[Any], bool] | None]] = [
    (text, fix, None)
    for text, fix in [
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
        ('{"a": 1 # note\n}', "removed_comment"),
        ('{, "a": 1}', "removed_leading_comma"),
        ('{"a": """x"""}', "triple_quotes"),
        ('{"a": ok}', "unquoted_value"),
        ('[{"a": 1}\n{"b": 2}]', "inserted_missing_comma"),
        ('{"a": "say "hi" now"}', "escaped_inner_quote"),
        ('{"a": "x”}', "mixed_quotes"),
        ('{"a": [1, 2}', "mismatched_bracket"),
        ('<thinking>\n{"a": 0}\n</thinking>\n{"a": 1}', "stripped_reasoning"),
        ('{"a": "it' + "\\'" + 's"}', "needless_escape"),
        ('("a", "b")', "python_tuple"),
        ('{"a": .25}', "nonstandard_number"),
        ('{"a": 2,000.50}', "thousands_separator"),
        ("{text: words{in brackets}}", "unquoted_value_brackets"),
        ('{"note": a value\n  over two lines}', "multiline_unquoted_value"),
        ('{\\"a\\": 1}', "escaped_json"),
        ('{5: "five"}', "non_string_key"),
        ("{`a`: 1}", "backtick_quotes"),
        ("{「a」: 1}", "corner_brackets"),
        ('{"a": 1，"b": 2}', "fullwidth_punctuation"),
        ('{"a":: 1}', "doubled_colon"),
        ("{'re': r'\\d+'}", "python_string_prefix"),
        ('{"a": "x" + "y"}', "joined_strings"),
        ('{"a": "x, "b": 1}', "missing_closing_quote"),
        ('{"a" 1}', "inserted_missing_colon"),
        ('{"path": "C:\\Users\\x"}', "literal_backslash"),
    ]
] + [
    (text, fix, check)
    for text, fix, check in [
        ("[1 2]", "joined_number", lambda value: value == [12]),
        ('{""id"": 1}', "doubled_quotes", lambda value: "id" in value),
        ('{"ok": ture}', "misspelled_literal", lambda value: value["ok"] is True),
        ('["a" b", "c"]', "missing_opening_quote", lambda value: len(value) == 3),
        ('{"a": "x\\\\"y\\\\" z"}', "double_escaped_quote", lambda v: "\\" not in v["a"]),
        ('{"a": 1}, "b": 2}', "removed_stray_bracket", lambda value: "b" in value),
    ]
]


@pytest.mark.parametrize(("text", "fix", "schema_check"), FIX_EXAMPLES)
def test_each_recovery_is_recorded_as_a_fix(
    text: str, fix: str, schema_check: Callable[[Any], bool] | None
) -> None:
    """Every kind of repair names itself in fixes."""
    outcome = parse_lenient(text, schema_check=schema_check)
    assert outcome.ok, outcome.issues
    assert fix in outcome.fixes


def test_every_fix_has_an_example_and_is_documented() -> None:
    """The list of fix names is complete: each has an example above and a line in the docs, and
    every name the reader notes is on the list."""
    assert {fix for _, fix, _ in FIX_EXAMPLES} == set(FIXES)
    docs = (Path(__file__).parents[3] / "internal_docs" / "validation.md").read_text("utf-8")
    assert [fix for fix in FIXES if f"`{fix}`" not in docs] == []
    files = [*Path(tolerant.__file__).parent.glob("*.py"), Path(lenient.__file__)]
    source = "".join(path.read_text("utf-8") for path in files)
    noted = set(re.findall(r'(?<![a-z])note\("([a-z_]+)"\)', source))
    noted |= set(re.findall(r'(?:append|where = \(*)\("([a-z_]+)"', source))
    assert noted
    assert noted <= set(FIXES)


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
    """A clean value after a repaired one wins before the schema is asked."""
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


def test_numbers_a_space_apart_are_refused_rather_than_guessed() -> None:
    """[1 2] could mean [12] or [1, 2]: without a schema it is ambiguous."""
    outcome = parse_lenient("[1 2]")
    assert not outcome.ok
    assert outcome.issues[0].keyword == "ambiguous"


def test_a_schema_that_accepts_one_reading_settles_numbers_a_space_apart() -> None:
    """With a schema, [1 2] is read both ways and the schema picks the one it accepts."""

    def pair(value: Any) -> bool:
        return isinstance(value, list) and len(value) == 2

    def single(value: Any) -> bool:
        return isinstance(value, list) and len(value) == 1

    assert parse_lenient("[1 2]", schema_check=pair).value == [1, 2]
    joined = parse_lenient("[1 2]", schema_check=single)
    assert joined.value == [12]
    assert "joined_number" in joined.fixes
    both = parse_lenient("[1 2]", schema_check=lambda value: True)
    assert not both.ok
    assert both.issues[0].keyword == "ambiguous"


def test_a_schema_settles_python_and_javascript_spellings_of_an_unquoted_key() -> None:
    """{True: 1} is {"true": 1} to Python and {"True": 1} to JavaScript; the schema decides."""
    assert parse_lenient("{True: 1}").issues[0].keyword == "ambiguous"
    assert parse_lenient("{True: 1}", schema_check=lambda v: "True" in v).value == {"True": 1}
    assert parse_lenient("{True: 1}", schema_check=lambda v: "true" in v).value == {"true": 1}


def test_words_that_may_be_literals_need_the_schema() -> None:
    """{"a": yes} is true in YAML and the word elsewhere: ambiguous unless the schema picks."""
    assert parse_lenient('{"a": yes}').issues[0].keyword == "ambiguous"
    assert parse_lenient('{"a": yes}', schema_check=lambda v: v["a"] is True).value == {"a": True}
    as_word = parse_lenient('{"a": yes}', schema_check=lambda v: isinstance(v["a"], str))
    assert as_word.value == {"a": "yes"}


def test_a_whole_string_with_quotes_inside_needs_a_schema_asking_for_a_string() -> None:
    """Alone, '"she said "hi" twice"' may be prose; inside a value, or under a string schema,
    the quotes are text."""
    text = '"she said "hi" twice"'
    assert not parse_lenient(text).ok
    assert parse_lenient(text, schema_check=lambda v: isinstance(v, str)).value == (
        'she said "hi" twice'
    )
    assert parse_lenient("[" + text + "]").value == ['she said "hi" twice']


def test_readings_the_schema_all_refuses_are_ambiguous_not_guessed() -> None:
    """When readings differ and the schema accepts none, no reading is picked."""
    outcome = parse_lenient("[1 2]", schema_check=lambda value: False)
    assert not outcome.ok
    assert outcome.issues[0].keyword == "ambiguous"


def test_a_complete_value_after_a_broken_one_wins() -> None:
    """Answers come last: prose braces that are not JSON, then the answer."""
    text = 'The set {1, 2} has two items. Answer: {"n": 2}'
    assert parse_lenient(text).value == {"n": 2}


def test_a_broken_value_after_a_complete_one_fails() -> None:
    """The last value may be the answer: when it is broken, nothing is returned."""
    outcome = parse_lenient('Draft: {"n": 1}. Final: {"n": 2, "m": }')
    assert not outcome.ok
    assert outcome.issues[0].keyword == "parse"


def test_a_clean_value_does_not_beat_a_repaired_one_that_follows_it() -> None:
    """A clean example before a repaired answer: only the schema can tell them apart."""
    text = "E.g. {\"n\": 1}. Answer: {'n': 2, 'm': 3}"
    assert parse_lenient(text).issues[0].keyword == "ambiguous"
    assert parse_lenient(text, schema_check=lambda v: "m" in v).value == {"n": 2, "m": 3}


def test_reasoning_blocks_are_skipped() -> None:
    """A draft inside <thinking> is never the answer; the block is named in fixes."""
    outcome = parse_lenient('<thinking>\nmaybe {"a": 1}\n</thinking>\n{"a": 2}')
    assert outcome.value == {"a": 2}
    assert outcome.fixes == ("stripped_reasoning",)
    only = parse_lenient('<think>{"a": 1}</think>')
    assert not only.ok
    assert only.issues[0].keyword == "parse"


def test_a_reasoning_tag_inside_a_value_is_text() -> None:
    """Only tags opening a line start a block, so a tag quoted in a string is kept."""
    outcome = parse_lenient("{'a': '<think>x</think>'}")
    assert outcome.value == {"a": "<think>x</think>"}


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
