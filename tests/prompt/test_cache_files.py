"""Caching as written in prompt files: the front matter, the ``{# cache #}`` lines found when the
body is split, and what the renderer makes of them (``check``'s warnings: tests/check/)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.errors import PromptLoadError
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
