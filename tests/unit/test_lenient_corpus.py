"""A corpus of malformed model outputs: the lenient parser recovers what is meant or refuses.

Each case states the value it must yield or the issue keyword it must fail with. The corpus test
counts recoveries and pins the one number that matters: zero silent wrong answers (a returned
value different from the expected one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from scriptorium.validate.parse import parse_lenient


@dataclass(frozen=True)
class Fails:
    """The case must fail with this issue keyword."""

    keyword: str


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    expected: Any  # the value, or Fails(keyword)
    schema_check: Callable[[Any], bool] | None = None


def _has(*keys: str) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, dict) and all(k in value for k in keys)


PERSON = {"name": "Ada", "age": 36}

CORPUS: list[Case] = [
    # code fences
    Case("fence json", '```json\n{"name": "Ada", "age": 36}\n```', PERSON),
    Case("fence no language", '```\n{"name": "Ada", "age": 36}\n```', PERSON),
    Case("fence uppercase language", '```JSON\n{"name": "Ada", "age": 36}\n```\n', PERSON),
    Case("fence inline", '```json {"name": "Ada", "age": 36}```', PERSON),
    Case("fence unclosed but complete", '```json\n{"name": "Ada", "age": 36}\n', PERSON),
    Case("fence scalar", "```json\n42\n```", 42),
    Case("fence array", "```json\n[1, 2, 3]\n```", [1, 2, 3]),
    # prose around the value
    Case("prose before", 'Here is the JSON you asked for:\n{"name": "Ada", "age": 36}', PERSON),
    Case("prose after", '{"name": "Ada", "age": 36}\n\nLet me know if you need more.', PERSON),
    Case(
        "prose around fence",
        'Sure! Here it is:\n\n```json\n{"name": "Ada", "age": 36}\n```\n\nAnything else?',
        PERSON,
    ),
    Case("prose with bracketed aside", 'Result [see below]:\n{"name": "Ada", "age": 36}', PERSON),
    Case("prose with braces in words", 'Use {curly} braces. {"name": "Ada", "age": 36}', PERSON),
    # trailing commas, comments
    Case("trailing comma object", '{"name": "Ada", "age": 36,}', PERSON),
    Case("trailing comma array", "[1, 2, 3,]", [1, 2, 3]),
    Case("trailing comma nested", '{"a": [1, 2,], "b": {"c": 1,},}', {"a": [1, 2], "b": {"c": 1}}),
    Case("line comment", '{\n  "name": "Ada", // the name\n  "age": 36\n}', PERSON),
    Case("block comment", '{"name": "Ada", /* years */ "age": 36}', PERSON),
    Case("comment before value", '// answer\n{"name": "Ada", "age": 36}', PERSON),
    Case(
        "comment-like text inside string kept",
        '{"url": "http://x.io//a"}',
        {"url": "http://x.io//a"},
    ),
    # quotes
    Case("single quotes", "{'name': 'Ada', 'age': 36}", PERSON),
    Case("single quotes with escaped apostrophe", "{'q': 'it\\'s'}", {"q": "it's"}),
    Case("double quote inside single quotes", "{'q': 'say \"hi\"'}", {"q": 'say "hi"'}),
    Case("smart double quotes", "{“name”: “Ada”, “age”: 36}", PERSON),
    Case("smart single quotes", "{‘name’: ‘Ada’, ‘age’: 36}", PERSON),
    Case("smart quotes inside a valid string kept", '{"q": "he said “hi”"}', {"q": "he said “hi”"}),
    # Python literals, unquoted keys, BOM
    Case(
        "python literals",
        "{'ok': True, 'err': None, 'x': False}",
        {"ok": True, "err": None, "x": False},
    ),
    Case("unquoted keys", "{name: 'Ada', age: 36}", PERSON),
    Case("BOM", '\ufeff{"name": "Ada", "age": 36}', PERSON),
    Case("raw newline in string", '{"text": "line one\nline two"}', {"text": "line one\nline two"}),
    # decoys and several candidates
    Case(
        "decoy example then answer, schema decides",
        'For example: {"name": "John"}.\nAnswer: {"name": "Ada", "age": 36}',
        PERSON,
        _has("name", "age"),
    ),
    Case(
        "two fenced blocks, schema decides",
        '```json\n{"id": 1}\n```\nor\n```json\n{"name": "Ada", "age": 36}\n```',
        PERSON,
        _has("name", "age"),
    ),
    Case(
        "clean candidate beats a repaired one",
        "Not this: {'name': 'x', 'age': 1,}\nThis: {\"name\": \"Ada\", \"age\": 36}",
        PERSON,
    ),
    Case("same value twice is one answer", '{"a": 1}\n\n```json\n{"a": 1}\n```', {"a": 1}),
    Case("two different roots", '{"a": 1}\n{"a": 2}', Fails("ambiguous")),
    Case(
        "decoy without schema", 'E.g. {"name": "John"}. Answer: {"name": "Ada"}', Fails("ambiguous")
    ),
    Case(
        "schema accepts both",
        '{"name": "John", "age": 1} or {"name": "Ada", "age": 36}',
        Fails("ambiguous"),
        _has("name"),
    ),
    Case("citation and answer", 'According to [1], {"a": 1}', Fails("ambiguous")),
    # truncation: never closed up
    Case("truncated object", '{"name": "Ada", "age": 3', Fails("truncated")),
    Case("truncated string", '{"name": "Ad', Fails("truncated")),
    Case("truncated in fence", '```json\n{"name": "Ada",\n', Fails("truncated")),
    Case("truncated after decoy", 'Example: {"a": 1}. Answer: {"a": 2, "b": [', Fails("truncated")),
    Case("truncated array of objects", '[{"a": 1}, {"a": 2}, {"a"', Fails("truncated")),
    Case("truncated closed fence", '```json\n{"a": [1, 2\n```', Fails("truncated")),
    Case("unterminated block comment", '{"a": 1 /* note', Fails("truncated")),
    # refused: meaning not certain
    Case("missing comma", '{"name": "Ada" "age": 36}', Fails("parse")),
    Case("missing comma hides inner object", '{"r": {"id": 1} "x": 2}', Fails("parse")),
    Case("broken answer after a decoy", 'E.g. {"a": 1}. Answer: {"a": 2 "b": 3}', Fails("parse")),
    Case("bare word element", '[x, {"a": 1}]', Fails("parse")),
    Case("NaN", '{"score": NaN}', Fails("non_finite")),
    Case("leading zero", '{"n": 007}', Fails("parse")),
    Case("python True as unquoted key", "{True: 1}", Fails("parse")),
    Case("invalid escape", '{"re": "\\d+"}', Fails("parse")),
    Case("only prose", "I cannot help with that.", Fails("parse")),
    Case("empty", "", Fails("parse")),
    # nested mixtures
    Case(
        "nested mixture",
        "Sure:\n```json\n{\n  // person\n  name: 'Ada',\n  tags: [“x”, 'y',],\n  ok: True,\n}\n```",
        {"name": "Ada", "tags": ["x", "y"], "ok": True},
    ),
    Case(
        "deep mixture with comments and trailing commas",
        "{'a': {'b': [{'c': None,},],}, /* end */}",
        {"a": {"b": [{"c": None}]}},
    ),
]


def _outcome(case: Case) -> tuple[bool, Any, str | None]:
    result = parse_lenient(case.text, schema_check=case.schema_check)
    return result.ok, result.value, None if result.ok else result.issues[0].keyword


def test_corpus_is_large_enough_and_names_are_unique() -> None:
    """The issue asks for at least 40 cases; names identify them in failures."""
    assert len(CORPUS) >= 40
    assert len({c.name for c in CORPUS}) == len(CORPUS)


def test_corpus_has_zero_silent_wrong_answers(capsys: pytest.CaptureFixture[str]) -> None:
    """No case yields a value other than the expected one; the recovery rate is printed."""
    wrong, recovered, expected_recoveries = [], 0, 0
    for case in CORPUS:
        ok, value, _ = _outcome(case)
        if not isinstance(case.expected, Fails):
            expected_recoveries += 1
        if ok and (isinstance(case.expected, Fails) or value != case.expected):
            wrong.append(case.name)
        elif ok:
            recovered += 1
    with capsys.disabled():
        print(f"\nlenient corpus: recovered {recovered}/{expected_recoveries} recoverable cases")
    assert wrong == []


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: c.name)
def test_corpus_case(case: Case) -> None:
    """Each case yields its stated value, or fails with its stated keyword."""
    ok, value, keyword = _outcome(case)
    if isinstance(case.expected, Fails):
        assert not ok
        assert keyword == case.expected.keyword
    else:
        assert ok
        assert value == case.expected
        assert type(value) is type(case.expected)
