"""Properties of JinjaRenderer over arbitrary templates and inputs."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.errors import PromptLoadError, PromptRenderError
from scriptorium.prompt.jinja import JinjaRenderer
from scriptorium.prompt.model import RenderedPrompt
from scriptorium.promptdef.model import PromptDefinition, Section

MAX_CHARS = 5_000
RENDERER = JinjaRenderer(max_output_chars=MAX_CHARS, max_steps=5_000)

# Pieces of Jinja syntax, so generated templates reach the parser and the sandbox, not just text.
FRAGMENTS = [
    "{{", "}}", "{%", "%}", "{#", "#}", "{{ x }}", "{{ y }}", "{% for i in items %}",
    "{% endfor %}", "{% if x %}", "{% else %}", "{% endif %}", "{% set z = ", "{% raw %}",
    "{% endraw %}", "{% macro m(a) %}", "{% endmacro %}", "{{ m(1) }}", "{{ loop.index }}",
    "for", "in", "if", "set", "is", "defined", "not", "and", "or", " ", "\n", "x", "y", "z",
    "items", "artifacts", "artifacts.doc", "range(", "(", ")", "[", "]", ",", ":", "|", "upper",
    "join", "length", "default", "center", "format", "replace", "*", "**", "+", "-", "~", "%",
    "/", "//", "'a'", '"b"', "0", "1", "9", "99999", "10**9", ".", "__class__", "x.items()",
    "## user\n", "## system\n",
]  # fmt: skip

# Expression pieces, for templates that parse and then exercise operators, filters and methods.
OPERANDS = ["x", "y", "items", "'ab'", "[1, 2]", "{'k': 'v'}", "3", "10**6", "-1", "2.5", "none"]
OPERATORS = [" * ", " ** ", " + ", " - ", " ~ ", " % ", " / ", " // ", " in ", " == ", " and "]
SUFFIXES = [
    "|upper", "|length", "|join(x)", "|center(99)", "|replace('a', y)", "|format(x)", "|list",
    "|default('d')", "|first", "|sum", "|tojson", "|string", "|batch(2)|list", "|reverse|list",
    ".upper()", ".split()", ".format(x)", ".ljust(9)", ".items()", ".get('k')", "[0]", ".k",
    ".__class__", ".append(1)", "",
]  # fmt: skip
expressions = st.builds(
    lambda a, op, b, suffix: f"{{{{ ({a}{op}{b}){suffix} }}}}",
    st.sampled_from(OPERANDS),
    st.sampled_from(OPERATORS),
    st.sampled_from(OPERANDS),
    st.sampled_from(SUFFIXES),
)
templates = st.one_of(
    st.text(max_size=40),
    st.lists(st.sampled_from(FRAGMENTS), max_size=14).map("".join),
    st.lists(expressions, min_size=1, max_size=3).map("\n".join),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)
inputs = st.dictionaries(
    st.sampled_from(["x", "y", "z", "items", "artifacts"]) | st.text(max_size=6),
    json_values,
    max_size=4,
)
sections = st.lists(
    st.builds(Section, role=st.sampled_from(["system", "user", "assistant"]), template=templates),
    max_size=3,
)


@settings(max_examples=150, deadline=None)
@given(sections=sections, session_id=st.none() | templates, values=inputs)
def test_rendering_returns_a_prompt_or_raises_prompt_render_error(
    sections: list[Section], session_id: str | None, values: dict[str, Any]
) -> None:
    """No other exception escapes render (a template that does not compile is a PromptLoadError),
    and what it returns keeps the bounds and rules."""
    shaped = PromptDefinition(id="prop", sections=tuple(sections), session_id=session_id)
    try:
        prompt: RenderedPrompt | PromptRenderError | PromptLoadError = RENDERER.render(
            shaped, inputs=values, artifacts={}
        )
    except (PromptRenderError, PromptLoadError) as err:
        prompt = err
    if isinstance(prompt, PromptRenderError | PromptLoadError):
        assert prompt.prompt_id == "prop"
        return
    texts = [m.text for m in prompt.messages] + ([prompt.system] if prompt.system else [])
    assert all(text and text == text.strip() for text in texts)
    assert sum(len(text) for text in texts) <= MAX_CHARS
    assert len(prompt.messages) <= sum(1 for s in sections if s.role != "system")


role_lines = st.lists(
    st.sampled_from(["## user\n", "## system\n", "## assistant\n", "\n## user", "text ", "\n"]),
    min_size=1,
    max_size=8,
).map("".join)


@settings(max_examples=60, deadline=None)
@given(value=st.one_of(role_lines, st.text(max_size=30).map(lambda t: f"{t}\n## user\n{t}")))
def test_an_input_with_role_lines_never_changes_the_messages(value: str) -> None:
    """However many role lines an input holds, the message structure is the definition's."""
    shaped = PromptDefinition(
        id="prop",
        sections=(
            Section(role="system", template="Rules: {{ v }}"),
            Section(role="user", template="Q: {{ v }}"),
            Section(role="assistant", template="A: {{ v }}"),
        ),
    )
    prompt = RENDERER.render(shaped, inputs={"v": value}, artifacts={})
    assert [m.role for m in prompt.messages] == ["user", "assistant"]
    assert prompt.messages[0].content == f"Q: {value}".strip()
    assert prompt.system == f"Rules: {value}".strip()
