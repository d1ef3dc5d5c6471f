"""Faults 4 and 8: every YAML the project reads goes through one strict loader (no anchors or
aliases, no explicit tags, no duplicate keys, bounded integers) whose messages never quote a value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium import Engine
from scriptorium._loading import FormatProblem, load_yaml
from scriptorium.errors import ProfileLoadError, ValidationError
from tests.hardening.isolated import run_isolated

KEY = "sk-ant-api03-Canary0123456789abcdefXYZ"

BOMB = """\
a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
type: object
"""


def project(tmp_path: Path, *, schema: str | None = None, profile: str | None = None) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    output = "{format: json_schema, schema: s.yaml}" if schema is not None else "{format: text}"
    (tmp_path / "prompts" / "p.prompt.md").write_text(
        f"---\nprofile: p\noutput: {output}\n---\nhi\n"
    )
    if schema is not None:
        (tmp_path / "prompts" / "s.yaml").write_text(schema)
    (tmp_path / "profiles" / "p.yaml").write_text(
        profile if profile is not None else "provider: fake\n"
    )
    return tmp_path


def test_an_alias_bomb_in_a_schema_file_is_refused_without_expanding(tmp_path: Path) -> None:
    """A few hundred bytes of anchors and aliases are a ValidationError, in bounded memory."""
    root = project(tmp_path, schema=BOMB)
    out = run_isolated(
        f"""
        from scriptorium import Engine
        from scriptorium.errors import ValidationError
        try:
            Engine({str(root)!r}).prepare("p")
        except ValidationError as err:
            print("refused:", err.message)
        """
    )
    assert "refused:" in out
    assert "anchors and aliases" in out


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("!!int abc", "explicit tags"),
        ("!!timestamp 2024-13-45", "explicit tags"),
        ("!!python/object:os.system x", "explicit tags"),
        ("!custom x", "explicit tags"),
        ("9" * 5000, "integer longer"),
        ("0x" + "f" * 5000, "integer longer"),
        ("&anchor x", "anchors and aliases"),
    ],
)
def test_profile_values_with_tags_or_huge_integers_are_reported_by_check_and_run(
    tmp_path: Path, value: str, why: str
) -> None:
    """check reports them as problems (no exception); loading is ProfileLoadError naming why."""
    root = project(tmp_path, profile=f"provider: fake\nmodel: {value}\n")
    engine = Engine(root)
    problems = engine.check()
    assert any(p.kind == "profile_invalid" and why in p.message for p in problems)
    with pytest.raises(ProfileLoadError, match=why):
        engine.prepare("p")


def test_a_tagged_key_is_never_quoted_by_run_or_check(tmp_path: Path) -> None:
    """``model: !!int <key>`` is refused without the key appearing in any message."""
    root = project(tmp_path, profile=f"provider: fake\nmodel: !!int {KEY}\n")
    engine = Engine(root)
    with pytest.raises(ProfileLoadError) as caught:
        engine.prepare("p")
    assert KEY not in str(caught.value)
    assert KEY not in repr(caught.value)
    assert all(KEY not in str(p) for p in engine.check())


def test_schema_files_refuse_duplicate_keys_and_tags(tmp_path: Path) -> None:
    """Schema files are read by the same loader as prompts and profiles."""
    root = project(tmp_path, schema="type: object\ntype: string\n")
    with pytest.raises(ValidationError, match="duplicate key"):
        Engine(root).prepare("p")
    (root / "prompts" / "s.yaml").write_text("type: !!str object\n")
    with pytest.raises(ValidationError, match="explicit tags"):
        Engine(root).prepare("p")


def test_a_quoted_key_in_a_yaml_syntax_error_is_not_repeated() -> None:
    """PyYAML problems quote pieces of the input; those pieces are cut from the message."""
    with pytest.raises(FormatProblem) as caught:
        load_yaml(f"a: !<{KEY}> x\n")
    assert KEY not in str(caught.value)


YAML_TOKENS = st.sampled_from(
    [
        "a", "b", ": ", "\n", "  ", "- ", "[", "]", "{", "}", ",", "&x ", "*x", "!!int ", "!!str ",
        "!t ", "'", '"', "#", "9" * 80, "1e9999", ".inf", "yes", "on", "~", "? ", "|", ">", "---",
        "...", "%YAML 1.1\n", "\t", "\\u00", KEY,
    ]
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(max_size=200), st.lists(YAML_TOKENS, max_size=40).map("".join)))
def test_any_yaml_text_loads_as_json_data_or_is_a_format_problem(text: str) -> None:
    """Whatever the text, the loader returns plain JSON data or raises FormatProblem whose message
    does not hold the canary key."""
    try:
        value = load_yaml(text)
    except FormatProblem as err:
        message = str(err)
    else:
        json.dumps(value, allow_nan=False)  # plain JSON data: this cannot fail
        message = ""
    assert KEY not in message


def test_a_key_that_looks_like_an_api_key_is_not_quoted_in_a_path() -> None:
    """Found by the property above: a mapping key holding a key-shaped string, whose value is
    refused (here a non-finite number), must not reach the message through the path."""
    text = f"{KEY}: .nan\n"
    with pytest.raises(FormatProblem) as caught:
        load_yaml(text)
    assert KEY not in str(caught.value)
    assert "non-finite" in str(caught.value)
