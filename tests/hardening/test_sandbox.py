"""Fault 3: values a template builds are bounded in size with shared parts counted each time, so a
structure of 2**64 items made of 64 shared references is refused before C code compares, hashes,
counts or prints it (work the step budget cannot see)."""

from __future__ import annotations

import pytest

from scriptorium.errors import PromptRenderError
from scriptorium.prompt._sandbox import MAX_CONTAINER_ITEMS
from scriptorium.prompt.jinja import JinjaRenderer
from scriptorium.testing import MemoryPromptRepository
from tests.hardening.isolated import run_isolated

DOUBLING = (
    "{% set ns = namespace(a=[0], b=[0]) %}{% for i in range(64) %}"
    "{% set ns.a = [ns.a, ns.a] %}{% set ns.b = [ns.b, ns.b] %}{% endfor %}"
)
CASES = [
    DOUBLING + "{{ ns.a == ns.b }}",
    DOUBLING + "{{ ns.a | length }}{{ ns.a | max }}",
    DOUBLING + "{{ ns.a }}",
    "{% set ns = namespace(a=(0,)) %}{% for i in range(64) %}{% set ns.a = (ns.a, ns.a) %}"
    "{% endfor %}{{ {ns.a: 1} }}",
    "{% set ns = namespace(a={}) %}{% for i in range(64) %}{% set ns.a = dict(x=ns.a, y=ns.a) %}"
    "{% endfor %}{{ ns.a == ns.a }}",
    "{% set ns = namespace(c=0) %}{% for i in range(64) %}"
    "{% set ns.c = namespace(a=ns.c, b=ns.c) %}{% endfor %}{{ ns }}",
    "{% set ns = namespace(a=[0]) %}{% for i in range(64) %}{% set ns.a = [ns.a, ns.a] | list %}"
    "{% endfor %}{{ ns.a | unique | list }}",
    "{% set ns = namespace(a=[0], b=[0]) %}{% for i in range(64) %}"
    "{% set ns.a = [ns.a[:], ns.a[:]] %}{% set ns.b = [ns.b[:], ns.b[:]] %}{% endfor %}"
    "{{ ns.a == ns.b }}",
    "{% set ns = namespace(a=[0], b=[0]) %}{% for i in range(64) %}"
    "{% set ns.a = [ns.a.copy(), ns.a.copy()] %}{% set ns.b = [ns.b.copy()] * 2 %}{% endfor %}"
    "{{ ns.a == ns.b }}",
    "{% set ns = namespace(a=[0]) %}{% for i in range(64) %}{% set ns.a = ns.a + ns.a %}"
    "{% endfor %}{{ ns.a | length }}",
]


def render(body: str) -> str:
    definition = MemoryPromptRepository({"p": body}).get("p")
    rendered = JinjaRenderer().render(definition, inputs={}, artifacts={})
    content = rendered.messages[0].content
    assert isinstance(content, str)
    return content


@pytest.mark.parametrize("body", CASES)
def test_shared_structures_that_double_are_refused_in_a_limited_child(body: str) -> None:
    """Each is a PromptRenderError (render bound exceeded), in bounded time and memory."""
    out = run_isolated(
        f"""
        from scriptorium.errors import PromptRenderError
        from scriptorium.prompt.jinja import JinjaRenderer
        from scriptorium.testing import MemoryPromptRepository
        definition = MemoryPromptRepository({{"p": {body!r}}}).get("p")
        try:
            JinjaRenderer().render(definition, inputs={{}}, artifacts={{}})
        except PromptRenderError as err:
            print("refused:", err.message)
        """
    )
    assert "refused:" in out
    assert "render bound exceeded" in out


def test_ordinary_containers_still_render() -> None:
    """Literals, tuples in loops and assignments, dicts and shared small structures are fine."""
    text = render(
        "{% set x = [1, 2, 3] %}{% set y = [x, x] %}{% for a, b in [(1, 2)] %}{{ a }}{{ b }}"
        "{% endfor %} {{ y == [x, x] }} {{ {'k': (1, 2)} }} {{ dict(a=y) | length }}"
    )
    assert text == "12 True {'k': (1, 2)} 1"


def test_the_bound_counts_shared_parts_each_time() -> None:
    """Doubling stops as soon as the expanded size passes the bound, not at the first doubling."""
    rounds = MAX_CONTAINER_ITEMS.bit_length() - 3
    body = "{% set ns = namespace(a=[0]) %}{% for i in range(" + str(rounds) + ") %}"
    body += "{% set ns.a = [ns.a, ns.a] %}{% endfor %}{{ ns.a | length }}"
    assert render(body) == "2"
    with pytest.raises(PromptRenderError, match="more than"):
        render(body.replace(f"range({rounds})", f"range({rounds + 4})"))


def test_any_template_from_the_grammar_ends_in_a_limited_child() -> None:
    """Hypothesis renders templates that build, share, compare, hash and print values; the child
    must finish (each render is refused or rendered) within the time and memory limits."""
    out = run_isolated(
        """
        from tests.hardening import sandbox_grammar
        sandbox_grammar.check()
        print("done")
        """
    )
    assert "done" in out
