"""Templates from a small grammar of the constructs that build, share and compare values, rendered
under hypothesis. Run by test_sandbox.py in a limited child process (python -m this module), so a
template that escaped the bounds fails the test by timeout instead of hanging the suite."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.errors import PromptRenderError
from scriptorium.prompt.jinja import JinjaRenderer
from scriptorium.testing import MemoryPromptRepository

RENDERER = JinjaRenderer()

ATOMS = st.sampled_from(["0", "'s'", "ns.a", "ns.b", "x", "[]", "{}", "()", "range(3)"])


def expressions() -> st.SearchStrategy[str]:
    return st.recursive(
        ATOMS,
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
            st.lists(inner, min_size=1, max_size=3).map(lambda xs: "(" + ", ".join(xs) + ",)"),
            st.tuples(inner, inner).map(lambda p: "{'k': " + p[0] + ", 'v': " + p[1] + "}"),
            st.tuples(inner, inner).map(lambda p: f"dict(a={p[0]}, b={p[1]})"),
            st.tuples(inner, inner).map(lambda p: f"namespace(a={p[0]}, b={p[1]})"),
            inner.map(lambda x: f"({x} | list)"),
            inner.map(lambda x: f"({x})[:]"),
            inner.map(lambda x: f"[{x}].copy()"),
            st.tuples(inner, inner).map(lambda p: f"([{p[0]}] + [{p[1]}])"),
        ),
        max_leaves=6,
    )


USES = st.sampled_from(
    [
        "{{ ns.a == ns.b }}",
        "{{ ns.a }}",
        "{{ ns.a | length }}",
        "{{ ns.a | tojson }}",
        "{{ [ns.a] | unique | list | length }}",
        "{{ {ns.a: 1} if ns.a is not mapping else 0 }}",
        "{{ ns.a | string | length }}",
    ]
)


@settings(max_examples=80, deadline=None, database=None)
@given(
    first=expressions(),
    grow=st.lists(expressions(), min_size=1, max_size=2),
    rounds=st.integers(1, 64),
    use=USES,
)
def check(first: str, grow: list[str], rounds: int, use: str) -> None:
    steps = "".join(f"{{% set ns.{n} = {e} %}}" for n, e in zip("ab", grow, strict=False))
    body = (
        f"{{% set x = {first} %}}{{% set ns = namespace(a=x, b=x) %}}"
        f"{{% for i in range({rounds}) %}}{steps}{{% endfor %}}{use}"
    )
    definition = MemoryPromptRepository({"p": body}).get("p")
    try:
        RENDERER.render(definition, inputs={}, artifacts={})
    except PromptRenderError:
        pass  # refused or failed: a sentinel either way


if __name__ == "__main__":
    check()
    print("done")
