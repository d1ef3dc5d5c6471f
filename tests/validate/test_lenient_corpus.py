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
    Case("broken answer after a decoy", 'E.g. {"a": 1}. Answer: {"a": 2, "b": }', Fails("parse")),
    Case(
        "clean decoy then repaired answer",
        'E.g. {"a": 1}. Answer: {"a": 2 "b": 3}',
        Fails("ambiguous"),
    ),
    Case("bare word element", '[x, {"a": 1}]', Fails("parse")),
    Case("NaN", '{"score": NaN}', Fails("non_finite")),
    Case("leading zero", '{"n": 007}', Fails("parse")),
    Case("python True as unquoted key", "{True: 1}", Fails("ambiguous")),
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
    # reasoning blocks before the answer
    Case(
        "thinking block with a draft",
        '<thinking>\nFirst try: {"name": "Bob"}\nNo, it is Ada.\n</thinking>\n{"name": "Ada", "age": 36}',
        PERSON,
    ),
    Case(
        "think block then fenced answer",
        '<think>the user wants JSON [1, 2]</think>\n```json\n{"name": "Ada", "age": 36}\n```',
        PERSON,
    ),
    Case(
        "reasoning tag with attributes",
        '<reasoning type="draft">{"name": "x"}</reasoning>\n{"name": "Ada", "age": 36}',
        PERSON,
    ),
    Case(
        "closing think tag only (opening dropped by the server)",
        'The user wants {"name": ...}\n</think>\n\n{"name": "Ada", "age": 36}',
        PERSON,
    ),
    Case(
        "closing think tag at the end of a line",
        'Draft {"name": "Bob"}, no.</think>\n{"name": "Ada", "age": 36}',
        PERSON,
    ),
    Case(
        "reasoning tag quoted in a value",
        "{'tag': '<think>x</think>'}",
        {"tag": "<think>x</think>"},
    ),
    Case("only reasoning", '<thinking>{"name": "Ada"}</thinking>', Fails("parse")),
    Case(
        "unclosed reasoning block: cut off before the answer",
        '<thinking>\ndraft {"a": 1}\n{"a": 2}',
        Fails("truncated"),
    ),
    Case("escaped apostrophe in double quotes", '{"a": "it\\\'s", "b": 1,}', {"a": "it's", "b": 1}),
    # leading commas, '#' comments
    Case("leading comma in an object", '{, "name": "Ada", "age": 36}', PERSON),
    Case(
        "comma-first style with a leading comma", '{\n  , "name": "Ada"\n  , "age": 36\n}', PERSON
    ),
    Case("hash comment after a value", '{"name": "Ada", # given name\n "age": 36}', PERSON),
    Case("hash comment line", '# result\n{"name": "Ada", "age": 36}', PERSON),
    Case("hash inside a string is text", "{'tag': '#1'}", {"tag": "#1"}),
    Case("leading comma in an array is a hole", "[, 1]", Fails("parse")),
    Case("doubled comma in an object", '{"a": 1,, "b": 2}', Fails("parse")),
    # triple quotes
    Case(
        "python triple-quoted string",
        '{"code": """def f():\n    return "x"\n"""}',
        {"code": 'def f():\n    return "x"\n'},
    ),
    Case("triple single quotes", "{'doc': '''it's\nfine'''}", {"doc": "it's\nfine"}),
    Case("triple quotes with an escape", '{"t": """a\\tb"""}', {"t": "a\tb"}),
    Case("unterminated triple quote", '{"t": """abc"}', Fails("truncated")),
    # unquoted string values
    Case("unquoted word value", '{"status": ok}', {"status": "ok"}),
    Case(
        "unquoted words value",
        '{"city": New York, "zip": "10001"}',
        {"city": "New York", "zip": "10001"},
    ),
    Case("unquoted value before a comment", '{"status": ok // done\n}', {"status": "ok"}),
    Case("unquoted url value", '{"url": https://x.io/a}', {"url": "https://x.io/a"}),
    Case("unquoted value on its own line", '{\n  "s": done\n  "n": 1\n}', {"s": "done", "n": 1}),
    Case("unquoted yes is a literal or a word", '{"ok": yes}', Fails("ambiguous")),
    Case("unquoted undefined", '{"x": undefined}', Fails("ambiguous")),
    Case("unquoted value with a comma", '{"place": Paris, France}', Fails("parse")),
    Case("number then words", '{"qty": 10 apples}', Fails("parse")),
    Case("unquoted value cut off", '{"status": ok', Fails("truncated")),
    # missing commas
    Case("missing comma between objects", '[{"a": 1} {"a": 2}]', [{"a": 1}, {"a": 2}]),
    Case(
        "missing comma between objects on lines",
        '[\n  {"a": 1}\n  {"a": 2}\n]',
        [{"a": 1}, {"a": 2}],
    ),
    Case("missing comma between members on lines", '{\n  "name": "Ada"\n  "age": 36\n}', PERSON),
    Case("missing comma between strings", '["x" "y"]', ["x", "y"]),
    Case("missing comma between members", '{"name": "Ada" "age": 36}', PERSON),
    Case(
        "missing comma after an inner object",
        '{"r": {"id": 1} "x": 2}',
        {"r": {"id": 1}, "x": 2},
    ),
    Case("missing comma between numbers on lines", "[\n  1\n  2\n]", [1, 2]),
    Case("numbers a space apart", "[1 2]", Fails("ambiguous")),
    Case("missing colon", '{"a" 1}', Fails("parse")),
    # unescaped quotes inside strings
    Case(
        "unescaped quotes inside a value",
        '{"quote": "she said "hi" twice"}',
        {"quote": 'she said "hi" twice'},
    ),
    Case(
        "unescaped quotes at the end of a value",
        '{"q": "they call it "the box""}',
        {"q": 'they call it "the box"'},
    ),
    Case(
        "unescaped quote before a comma in the text",
        '{"q": "he said "no", then left", "n": 1}',
        {"q": 'he said "no", then left', "n": 1},
    ),
    Case("apostrophe in single quotes", "{'text': 'don't', 'n': 1}", {"text": "don't", "n": 1}),
    Case("quotes before commas", '["a "b", "c "d"]', ['a "b', 'c "d']),
    Case("quotes that read two ways", '["a "null" b"]', Fails("ambiguous")),
    Case("quote where a string would start", '{"a": "x, "b": 1}', Fails("parse")),
    # wrong closing brackets
    Case("brace closing an array", '{"a": [1, 2}', {"a": [1, 2]}),
    Case("bracket closing an object", '[{"a": 1]', [{"a": 1}]),
    Case("brace for bracket mid-object", '{"a": [1, 2}, "b": 3}', {"a": [1, 2], "b": 3}),
    Case("bracket for brace at the end", '{"a": 1]', {"a": 1}),
    Case("wrong bracket in prose", 'Result: {"a": [1, 2}, "b": 3} ok', {"a": [1, 2], "b": 3}),
    Case("wrong brackets cut off", '{"a": [{"b": 1]', Fails("truncated")),
    # mixed quotes
    Case("smart quote closing a straight one", '{"name": "Ada”, "age": 36}', PERSON),
    Case("straight quote closing a smart one", '{"name": “Ada", "age": 36}', PERSON),
    Case("smart quote closing a key", '{"name”: "Ada", "age": 36}', PERSON),
    Case(
        "smart quotes inside a straight string stay",
        "{'q': \"he said “hi”, then left\"}",
        {"q": "he said “hi”, then left"},
    ),
    # answers come last
    Case(
        "placeholder then answer",
        'Using the format {key: value}, the output is: {"key": "v1"}',
        {"key": "v1"},
    ),
    Case(
        "placeholder then repaired answer",
        "Using the format {key: value}, the output is: {'key': 'v1'}",
        {"key": "v1"},
    ),
    Case(
        "set notation then answer",
        'The set {1, 2, 3} has 3 items, so: {"count": 3}',
        {"count": 3},
    ),
    Case(
        "broken example then answer",
        'Not {"a": 1 "b"} but {"name": "Ada", "age": 36}',
        PERSON,
    ),
    Case("quoted brackets in prose", 'He typed "[1]" and meant {"n": 1}', {"n": 1}),
    Case("answer then broken value", '{"a": 1} and then {"a": 2, "b": ', Fails("truncated")),
]


def _outcome(case: Case) -> tuple[bool, Any, str | None]:
    result = parse_lenient(case.text, schema_check=case.schema_check)
    return result.ok, result.value, None if result.ok else result.issues[0].keyword


def test_corpus_is_large_enough_and_names_are_unique() -> None:
    """Several cases per category; names identify them in failures."""
    assert len(CORPUS) >= 110
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
