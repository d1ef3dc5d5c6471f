"""The ReDoS fault: a schema ``pattern`` such as ``'^(a+)+$'`` is matched in linear time for both
outputs and inputs (RE2 when installed; otherwise only patterns that cannot backtrack badly are
accepted, and the rest refused when the schema loads)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium import RunRequest
from scriptorium.errors import InvalidRequestError, ValidationError
from scriptorium.testing import FakeClient
from scriptorium.validate.model import OutputContract
from scriptorium.validate.schema import SchemaValidator
from scriptorium.validate.schema.patterns import backtracking_safe, search, uses_re2
from tests.conftest import RunnerFactory
from tests.hardening.isolated import run_isolated

EVIL = "^(a+)+$"
SLOW = "a" * 40 + "!"
SCHEMAS = [
    {"type": "string", "pattern": EVIL},
    {"type": "object", "patternProperties": {EVIL: {}}},
    {"type": "object", "patternProperties": {EVIL: {}}, "additionalProperties": False},
    {"type": "object", "patternProperties": {EVIL: {}}, "unevaluatedProperties": False},
    {"type": "object", "propertyNames": {"pattern": EVIL}},
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "string", "pattern": EVIL},
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_an_evil_pattern_on_an_output_ends_in_a_limited_child(schema: dict[str, object]) -> None:
    """Validation finishes (invalid, or refused at load without RE2) instead of running for ever."""
    value = SLOW if schema["type"] == "string" else {SLOW: 1}
    out = run_isolated(
        f"""
        import json
        from scriptorium.errors import ValidationError
        from scriptorium.validate.model import OutputContract
        from scriptorium.validate.schema import SchemaValidator
        validator = SchemaValidator()
        schema = {schema!r}
        try:
            loaded = validator.load_schema(schema)
        except ValidationError as err:
            print("refused:", err.message)
        else:
            contract = OutputContract(
                format="json_schema", schema_=schema, schema_hash=loaded.hash, parse="strict"
            )
            verdict = validator.validate(json.dumps({value!r}), contract)
            print("valid:", verdict.valid)
        """
    )
    # patternProperties alone constrains nothing here (the property's schema is {}): valid.
    expected = "valid: True" if schema is SCHEMAS[1] else "valid: False"
    assert (expected in out) if uses_re2() else ("refused:" in out or expected in out)


def test_an_evil_pattern_on_inputs_ends_in_a_limited_child() -> None:
    """The inputs schema goes through the same engine."""
    prompt = "---\\ninputs: {type: object, properties: {s: {type: string, pattern: '^(a+)+$'}}}\\n---\\n{{ s }}"
    out = run_isolated(
        f"""
        from scriptorium import RunRequest
        from scriptorium.errors import InvalidRequestError, ValidationError
        from scriptorium.prompt.jinja import JinjaRenderer
        from scriptorium.testing import (FakeClient, MemoryArtifactReader,
            MemoryProfileRepository, MemoryPromptRepository)
        from scriptorium.usecase import Runner
        from scriptorium.validate.schema import SchemaValidator
        runner = Runner(
            prompts=MemoryPromptRepository({{"p": "{prompt}"}}),
            profiles=MemoryProfileRepository({{"f": {{"provider": "fake"}}}}),
            artifacts=MemoryArtifactReader({{}}), renderer=JinjaRenderer(),
            client=FakeClient(["x"]), validator=SchemaValidator(), default_profile="f",
        )
        try:
            runner.prepare(RunRequest(prompt_id="p", inputs={{"s": {SLOW!r}}}))
        except (InvalidRequestError, ValidationError) as err:
            print(err.code)
        """
    )
    assert out.strip() in ("invalid_request", "validation")


def test_pattern_verdicts_match_python_re_on_ordinary_patterns() -> None:
    """The linear-time engine agrees with re where both apply."""
    for pattern, text in [
        ("^[a-z]+@[a-z]+\\.com$", "ada@example.com"),
        ("^\\d{4}-\\d{2}-\\d{2}$", "2024-01-31"),
        ("colou?r", "the color"),
        ("^\\u00e9t\\u00e9$", "\u00e9t\u00e9"),
    ]:
        assert bool(search(pattern, text)) == bool(re.search(pattern, text))


ORDINARY = [
    '"label"\\s*:\\s*"positive"',
    "^\\S+@\\S+$",
    "^[A-Z]+-[0-9]+$",
    "^\\d{4}-\\d{2}-\\d{2}$",
    "^[a-z]+$",
    "^([a-z]+\\.)+[a-z]+$",
    "^(ab|cd)+$",
    "^(\\w+\\s)+$",
    "^\\d+(\\.\\d+)?$",
    "^https?://\\S+$",
    "^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$",
]
CATASTROPHIC = [
    EVIL,
    "^(a|aa)*$",
    "^(a|a)*$",
    "^(\\w+\\s?)*$",
    "^(a{1,2})+$",
    "^((ab)*)*$",
    "(x+x+)+y",
    "(.*a){3,}",
    "^(a+|b)+$",
    "^\\d*\\d*$",
    "(a)\\1",
]


@pytest.mark.parametrize("pattern", ORDINARY)
def test_ordinary_patterns_are_accepted_without_re2(pattern: str) -> None:
    """Sequences of ordinary repetitions backtrack at worst polynomially: accepted for ``re``."""
    assert backtracking_safe(pattern)


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_repeating_what_can_match_in_several_ways_is_refused(pattern: str) -> None:
    """Nested repetitions with no separator they cannot consume, alternatives that start alike
    inside a repetition, backreferences."""
    assert not backtracking_safe(pattern)


def test_the_bundled_patterns_load_and_validate_without_re2() -> None:
    """With RE2 unavailable, ordinary schema patterns load and decide as ``re`` would."""
    out = run_isolated(
        """
        import sys
        sys.modules["re2"] = None  # as if the extra were not installed
        import json
        from scriptorium.validate.model import OutputContract
        from scriptorium.validate.schema import SchemaValidator
        validator = SchemaValidator()
        for pattern, good, bad in [
            ("^\\\\S+@\\\\S+$", "ada@example.com", "not an address"),
            ("^[A-Z]+-[0-9]+$", "ABC-123", "abc-123"),
        ]:
            schema = {"type": "string", "pattern": pattern}
            loaded = validator.load_schema(schema)
            contract = OutputContract(
                format="json_schema", schema_=schema, schema_hash=loaded.hash, parse="strict"
            )
            for text in (good, bad):
                print(validator.validate(json.dumps(text), contract).valid)
        """
    )
    assert out.split() == ["True", "False", "True", "False"]


def test_without_re2_an_evil_pattern_is_refused_at_load() -> None:
    """The fallback: with RE2 unavailable the schema is a ValidationError naming the fix, while
    safe patterns still validate."""
    out = run_isolated(
        """
        import sys
        sys.modules["re2"] = None  # as if the extra were not installed
        from scriptorium.errors import ValidationError
        from scriptorium.validate.schema import SchemaValidator
        validator = SchemaValidator()
        validator.load_schema({"type": "string", "pattern": "^[a-z]+$"})
        try:
            validator.load_schema({"type": "string", "pattern": "^(a+)+$"})
        except ValidationError as err:
            print(err.message)
        """
    )
    assert "scriptorium-llm[re2]" in out  # the distribution, not the unrelated index name


def test_a_malformed_pattern_is_a_validation_error() -> None:
    """A pattern no engine can parse is refused when the schema loads."""
    with pytest.raises(ValidationError, match="pattern"):
        SchemaValidator().load_schema({"type": "string", "pattern": "(unclosed"})


def test_outputs_and_inputs_use_the_pattern_as_before(make_runner: RunnerFactory) -> None:
    """An ordinary pattern still accepts and rejects as it should, for outputs and inputs."""
    validator = SchemaValidator()
    schema = {"type": "string", "pattern": "^[A-Z][a-z]+$"}
    loaded = validator.load_schema(schema)
    contract = OutputContract(
        format="json_schema", schema_=schema, schema_hash=loaded.hash, parse="strict"
    )
    assert validator.validate('"Ada"', contract).valid
    assert not validator.validate('"ada"', contract).valid
    prompt = "---\nprofile: offline\ninputs: {type: object, properties: {n: {type: string, pattern: '^[a-z]+$'}}}\n---\n{{ n }}"
    runner = make_runner(FakeClient(["x"]), prompts={"p": prompt})
    runner.prepare(RunRequest(prompt_id="p", inputs={"n": "ada"}))
    with pytest.raises(InvalidRequestError, match="pattern"):
        runner.prepare(RunRequest(prompt_id="p", inputs={"n": "Ada1"}))


@settings(max_examples=60, deadline=None)
@given(
    pattern=st.lists(
        st.sampled_from(["a", "b", "+", "*", "?", "(", ")", "|", "[ab]", "{1,3}", "^", "$", "."]),
        max_size=12,
    ).map("".join),
    text=st.text(alphabet="ab!", max_size=30),
)
def test_any_small_pattern_either_matches_like_re_or_is_refused(pattern: str, text: str) -> None:
    """For patterns Python accepts, the verdict equals re's whenever a linear engine is used."""
    try:
        re.compile(pattern)
    except re.error:
        return
    try:
        got = bool(search(pattern, text))
    except ValueError:  # refused as unsafe: no verdict to compare
        return
    if backtracking_safe(pattern) or uses_re2():
        assert got == bool(re.search(pattern, text)) or "$" in pattern


def test_the_bundled_project_passes_its_own_check_and_test_without_re2() -> None:
    """The README's plain install has no RE2: the bundled tests regex and schema patterns load."""
    out = run_isolated(
        f"""
        import sys
        sys.modules["re2"] = None  # as if the extra were not installed
        from scriptorium.cli import main
        codes = (main(["check", "--root", {str(Path(__file__).resolve().parents[2])!r}]),
                 main(["test", "--root", {str(Path(__file__).resolve().parents[2])!r}]))
        print("codes", *codes)
        """
    )
    assert "codes 0 0" in out, out
