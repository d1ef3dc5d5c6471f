"""The ``scriptorium check`` linter, in process, one small project on disk per finding."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from scriptorium import Engine
from scriptorium.check.problems import KINDS, Problem
from scriptorium.check.project import check_project

GOOD_PROFILE = "provider: fake\noptions: {responses: [ok]}\n"
PASTED = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"


def project(root: Path, files: Mapping[str, str], *, profile: bool = True) -> Engine:
    files = {"profiles/good.yaml": GOOD_PROFILE, **files} if profile else dict(files)
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "prompts").mkdir(exist_ok=True)
    return Engine(root)


def kinds(problems: list[Problem]) -> list[tuple[str, str]]:
    return [(p.file, p.kind) for p in problems]


def prompt(front: str, body: str) -> str:
    return f"---\nprofile: good\n{front}---\n{body}\n"


def test_a_clean_project_has_no_problems(tmp_path: Path) -> None:
    engine = project(
        tmp_path,
        {
            "prompts/a.prompt.md": prompt(
                "inputs: {type: object, properties: {who: {type: string}}}\n"
                "artifacts: {doc: {required: false}}\n",
                "## system\nBe brief.\n## user\n{{ who }} {{ artifacts.doc.text }}"
                "{% set n = 2 %}{{ n }}{% for x in range(3) %}{{ x }}{% endfor %}",
            )
        },
    )
    assert check_project(engine) == []
    assert engine.check() == []


def test_the_bundled_examples_are_clean() -> None:
    """The repository's own prompts/ and profiles/ stay lint-free."""
    assert Engine(Path(__file__).resolve().parents[2]).check() == []


def test_variables_used_without_any_inputs_declaration_are_reported(tmp_path: Path) -> None:
    engine = project(tmp_path, {"prompts/a.prompt.md": prompt("", "Hi {{ who }}")})
    (problem,) = check_project(engine)
    assert (problem.kind, problem.file) == ("undeclared_variable", "prompts/a.prompt.md")
    assert "'who'" in problem.message
    assert "no inputs" in problem.message


def test_a_variable_is_reported_once_even_if_every_section_uses_it(tmp_path: Path) -> None:
    body = "## system\n{{ who }}\n## user\n{{ who }}"
    engine = project(tmp_path, {"prompts/a.prompt.md": prompt("", body)})
    assert kinds(check_project(engine)) == [("prompts/a.prompt.md", "undeclared_variable")]


def test_inputs_declared_through_combinators_are_not_second_guessed(tmp_path: Path) -> None:
    front = "inputs: {allOf: [{type: object, properties: {who: {type: string}}}]}\n"
    engine = project(tmp_path, {"prompts/a.prompt.md": prompt(front, "Hi {{ who }}")})
    assert check_project(engine) == []


def test_the_session_id_template_counts_as_a_use(tmp_path: Path) -> None:
    front = "inputs: {properties: {who: {}}}\nsession_id: 's-{{ who }}'\n"
    engine = project(tmp_path, {"prompts/a.prompt.md": prompt(front, "Hi")})
    assert check_project(engine) == []


def test_artifacts_read_by_name_are_checked_against_the_declaration(tmp_path: Path) -> None:
    front = "artifacts: {declared: {required: false}}\n"
    body = "{{ artifacts['report'].text }}"
    engine = project(tmp_path, {"prompts/a.prompt.md": prompt(front, body)})
    found = check_project(engine)
    assert [p.kind for p in found] == ["undeclared_artifact", "unused_artifact"]
    assert "artifacts.report" in found[0].message
    assert "'declared'" in found[1].message


def test_iterating_over_all_artifacts_skips_the_artifact_checks(tmp_path: Path) -> None:
    front = "artifacts: {a: {required: false}, b: {required: false}}\n"
    body = "{% for name, art in artifacts.items() %}{{ art.text }}{% endfor %}"
    engine = project(tmp_path, {"prompts/a.prompt.md": prompt(front, body)})
    assert check_project(engine) == []


def test_a_template_syntax_error_stops_the_variable_checks(tmp_path: Path) -> None:
    engine = project(tmp_path, {"prompts/a.prompt.md": prompt("", "{% if %}{{ x }}")})
    assert [p.kind for p in check_project(engine)] == ["template_syntax"]


def test_template_loading_tags_are_syntax_problems(tmp_path: Path) -> None:
    engine = project(tmp_path, {"prompts/a.prompt.md": prompt("", "{% include 'x' %}")})
    (problem,) = check_project(engine)
    assert problem.kind == "template_syntax"
    assert "include" in problem.message


@pytest.mark.parametrize(
    ("front", "kind"),
    [
        ("output: {format: json_schema}\n", "schema_invalid"),
        ("output: {format: json_schema, schema: gone.json}\n", "schema_invalid"),
        ("output: {format: json_schema, schema: bad.json}\n", "schema_invalid"),
        ("output: {format: json_schema, schema: {type: 12}}\n", "schema_invalid"),
        ("output: {format: json, schema: {type: object}}\n", "schema_unused"),
        ("inputs: {type: object, properties: {}, required: 7}\n", "inputs_schema_invalid"),
    ],
)
def test_schema_problems(tmp_path: Path, front: str, kind: str) -> None:
    engine = project(
        tmp_path,
        {"prompts/a.prompt.md": prompt(front, "Hi"), "prompts/bad.json": "{not json"},
    )
    assert kinds(check_project(engine)) == [("prompts/a.prompt.md", kind)]


def test_a_schema_file_relative_to_the_prompt_is_found(tmp_path: Path) -> None:
    engine = project(
        tmp_path,
        {
            "prompts/x/a.prompt.md": prompt(
                "output: {format: json_schema, schema: s.json}\n", "Hi"
            ),
            "prompts/x/s.json": '{"type": "object"}',
        },
    )
    assert check_project(engine) == []


def test_a_missing_profile_is_reported_on_the_prompt(tmp_path: Path) -> None:
    engine = project(tmp_path, {"prompts/a.prompt.md": "---\nprofile: elsewhere\n---\nHi\n"})
    (problem,) = check_project(engine)
    assert (problem.kind, problem.file) == ("profile_missing", "prompts/a.prompt.md")
    assert "'elsewhere'" in problem.message


def test_broken_front_matter_is_one_prompt_invalid_problem(tmp_path: Path) -> None:
    engine = project(tmp_path, {"prompts/a.prompt.md": "---\nversion: [\n---\nHi\n"})
    assert kinds(check_project(engine)) == [("prompts/a.prompt.md", "prompt_invalid")]


def test_files_whose_names_cannot_be_ids_are_reported(tmp_path: Path) -> None:
    engine = project(
        tmp_path,
        {"prompts/Shout.prompt.md": "Hi\n", "profiles/Bad Name.yaml": GOOD_PROFILE},
    )
    assert kinds(check_project(engine)) == [
        ("profiles/Bad Name.yaml", "profile_name"),
        ("prompts/Shout.prompt.md", "prompt_name"),
    ]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("provider: fake\nsurprise: 1\n", "surprise"),
        ("provider: nosuch\n", "unknown provider 'nosuch'"),
        ("provider: openai\napi_key_env: K\n", "needs a model"),
        ("provider: [\n", "invalid YAML"),
    ],
)
def test_profile_problems(tmp_path: Path, text: str, needle: str) -> None:
    engine = project(tmp_path, {"profiles/p.yaml": text})
    (problem,) = check_project(engine)
    assert (problem.file, problem.kind) == ("profiles/p.yaml", "profile_invalid")
    assert needle in problem.message


def test_pasted_keys_in_profiles_are_reported_by_path_never_by_value(tmp_path: Path) -> None:
    text = f"provider: fake\noptions:\n  responses: [ok]\n  headers: {{auth: {PASTED}}}\n"
    engine = project(tmp_path, {"profiles/p.yaml": text})
    (problem,) = check_project(engine)
    assert (problem.file, problem.kind) == ("profiles/p.yaml", "secret_in_profile")
    assert "options.headers.auth" in problem.message
    assert PASTED not in str(problem) + repr(problem)


def test_pasted_keys_in_unparsable_profiles_are_reported_by_line(tmp_path: Path) -> None:
    engine = project(tmp_path, {"profiles/p.yaml": f"provider: fake\nkey: {PASTED}\n  bad: [\n"})
    (problem,) = check_project(engine)
    assert (problem.kind, problem.line) == ("secret_in_profile", 2)
    assert str(problem).startswith("profiles/p.yaml:2: secret_in_profile: ")
    assert PASTED not in str(problem)


def test_pasted_keys_in_prompt_files_are_reported_by_line(tmp_path: Path) -> None:
    engine = project(tmp_path, {"prompts/a.prompt.md": prompt("", f"Hi\nuse {PASTED}")})
    (problem,) = check_project(engine)
    assert (problem.kind, problem.line) == ("secret_in_prompt", 5)
    assert PASTED not in problem.message
    assert problem.to_dict() == {
        "file": "prompts/a.prompt.md",
        "kind": "secret_in_prompt",
        "message": problem.message,
        "line": 5,
    }


def test_a_project_without_prompts_is_a_problem(tmp_path: Path) -> None:
    (problem,) = check_project(Engine(tmp_path))
    assert (problem.file, problem.kind) == ("prompts", "no_prompts_dir")


def test_every_kind_found_is_a_documented_kind(tmp_path: Path) -> None:
    """KINDS is the vocabulary of the JSON output: everything reported comes from it."""
    engine = project(
        tmp_path,
        {
            "prompts/a.prompt.md": prompt(
                "inputs: {properties: {u: {}}}\n", "{{ v }} {{ artifacts.x }}"
            ),
            "prompts/b.prompt.md": "---\nprofile: gone\n---\nHi\n",
            "profiles/c.yaml": "provider: nosuch\n",
        },
    )
    found = {p.kind for p in check_project(engine)}
    assert found == {
        "undeclared_variable",
        "unused_input",
        "undeclared_artifact",
        "profile_missing",
        "profile_invalid",
    }
    assert found <= set(KINDS)
    assert all(isinstance(text, str) and text for text in KINDS.values())
