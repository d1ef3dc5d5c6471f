"""Caching as written in prompt files: the front matter, the ``{# cache #}`` lines found when the
body is split, what the renderer makes of them, and ``check``'s warnings."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium import Engine
from scriptorium.errors import PromptLoadError
from scriptorium.lint import Problem
from scriptorium.prompt.cache_marks import normalize
from scriptorium.prompt.jinja import JinjaRenderer
from scriptorium.prompt.model import CachePoint
from scriptorium.promptdef.model import PromptDefinition
from scriptorium.promptdef.parse import parse_prompt


@pytest.mark.parametrize(
    ("front", "mode", "ttl"),
    [
        ("", "off", "5m"),
        ("cache: off\n", "off", "5m"),
        ("cache: false\n", "off", "5m"),
        ("cache: {mode: off}\n", "off", "5m"),
        ("cache: static\n", "static", "5m"),
        ("cache: {mode: auto, ttl: 1h}\n", "auto", "1h"),
        ("cache: {mode: explicit}\n", "explicit", "5m"),
    ],
)
def test_the_cache_front_matter(front: str, mode: str, ttl: str) -> None:
    definition = parse_prompt(f"---\n{front}---\nHello.\n", prompt_id="p")
    assert (definition.cache.mode, definition.cache.ttl) == (mode, ttl)


@pytest.mark.parametrize(
    "front", ["cache: {mode: always}\n", "cache: {ttl: 2h}\n", "cache: {mode: auto, size: 3}\n"]
)
def test_a_bad_cache_front_matter_is_a_load_error(front: str) -> None:
    with pytest.raises(PromptLoadError):
        parse_prompt(f"---\n{front}---\nHello.\n", prompt_id="p")


def test_cache_lines_are_taken_out_of_the_template_and_remembered_by_offset() -> None:
    definition = parse_prompt(
        "## user\nFirst part.\n  {# cache 1h #}  \nSecond.\n{#- cache -#}\nThird.\n",
        prompt_id="p",
    )
    (section,) = definition.sections
    assert section.template == "First part.\nSecond.\nThird."
    cuts = [(section.template[: m.offset], m.ttl) for m in section.cache_marks]
    assert cuts == [("First part.", "1h"), ("First part.\nSecond.", None)]


def test_other_comments_stay_comments() -> None:
    definition = parse_prompt("## user\n{# cache later #}\nHi.\n", prompt_id="p")
    (section,) = definition.sections
    assert section.cache_marks == ()
    assert "{# cache later #}" in section.template


def test_prompts_without_caching_hash_as_before() -> None:
    """The new keys stay out of definition_hash until they are used."""
    definition = parse_prompt("---\nversion: 1\n---\nHello {{ name }}.\n", prompt_id="p")
    form = definition.hash_form()
    assert "cache" not in form
    assert "cache_marks" not in form["sections"][0]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet="ab {}#%\n", max_size=12), min_size=1, max_size=4),
    st.text(alphabet="xy {}#\n", max_size=20),
)
def test_rendering_with_marks_gives_the_text_rendered_without(
    chunks: list[str], value: str
) -> None:
    """Whatever the surrounding text and the input, the explicit rendering is the off rendering,
    and every breakpoint falls inside it."""
    body = "\n{# cache #}\n".join(chunk.replace("{", "(").replace("#", "+") for chunk in chunks)
    body = f"## user\nstart {{{{ v }}}}\n{body}\nend"
    renderer = JinjaRenderer()
    off = renderer.render(_definition(body, "off"), inputs={"v": value}, artifacts={})
    explicit = renderer.render(_definition(body, "explicit"), inputs={"v": value}, artifacts={})
    assert explicit.messages == off.messages
    for point in explicit.cache_points:
        assert point.message == 0
        assert point.offset is not None
        assert 0 <= point.offset <= len(off.messages[0].content)


def _definition(body: str, mode: str) -> PromptDefinition:
    return parse_prompt(f"---\ncache: {{mode: {mode}}}\n---\n{body}", prompt_id="p")


def test_normalize_keeps_the_last_four_and_raises_earlier_ttls() -> None:
    points = [CachePoint(message=0, offset=i, ttl="5m") for i in range(5)]
    points[3] = CachePoint(message=0, offset=3, ttl="1h")
    kept = normalize(points)
    assert [p.offset for p in kept] == [1, 2, 3, 4]
    assert [p.ttl for p in kept] == ["1h", "1h", "1h", "5m"]


# --- check --------------------------------------------------------------------------------------


def _project(tmp_path: Path, prompt: str, model: str = "claude-sonnet-4-6") -> list[Problem]:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "claude.yaml").write_text(
        f"provider: anthropic\nmodel: {model}\napi_key_env: ANTHROPIC_API_KEY\n", encoding="utf-8"
    )
    (tmp_path / "prompts" / "p.prompt.md").write_text(prompt, encoding="utf-8")
    return Engine(tmp_path).check()


LONG = "A rule that never changes. " * 200  # about 1,350 tokens


def _kinds(problems: list[Problem]) -> list[str]:
    return [p.kind for p in problems]


def test_check_is_quiet_about_a_sound_static_prompt(tmp_path: Path) -> None:
    prompt = f"---\nprofile: claude\ncache: static\n---\n## system\n{LONG}\n\n## user\nHi.\n"
    assert _project(tmp_path, prompt) == []


def test_check_warns_about_more_than_four_breakpoints(tmp_path: Path) -> None:
    parts = "\n".join(f"{LONG}\n{{# cache #}}" for _ in range(5))
    prompt = f"---\nprofile: claude\ncache: explicit\n---\n## user\n{parts}\nQ\n"
    problems = _project(tmp_path, prompt)
    assert _kinds(problems) == ["cache_breakpoints"]
    assert problems[0].severity == "warning"
    assert problems[0].to_dict()["severity"] == "warning"


def test_check_warns_about_a_breakpoint_after_input_dependent_text(tmp_path: Path) -> None:
    prompt = (
        "---\nprofile: claude\ncache: explicit\ninputs: {type: object, properties: "
        f"{{name: {{type: string}}}}}}\n---\n## user\nHello {{{{ name }}}}\n{LONG}\n"
        "{# cache #}\nQ\n"
    )
    assert _kinds(_project(tmp_path, prompt)) == ["cache_after_input"]


def test_check_warns_about_a_prefix_shorter_than_the_model_caches(tmp_path: Path) -> None:
    prompt = "---\nprofile: claude\ncache: static\n---\n## system\nShort rules.\n\n## user\nHi.\n"
    problems = _project(tmp_path, prompt, model="claude-haiku-4-5")
    assert _kinds(problems) == ["cache_too_short"]
    assert "4096" in problems[0].message


def test_warnings_do_not_fail_check(tmp_path: Path) -> None:
    from scriptorium.cli import main

    prompt = "---\nprofile: claude\ncache: static\n---\n## system\nShort rules.\n\n## user\nHi.\n"
    _project(tmp_path, prompt)
    assert main(["check", "--root", str(tmp_path)]) == 0
