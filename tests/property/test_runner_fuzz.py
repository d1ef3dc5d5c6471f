"""Bad input of every kind gets a sentinel: nothing but ScriptoriumError escapes prepare or run."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from scriptorium.errors import ScriptoriumError
from scriptorium.testing import FakeClient
from scriptorium.usecase import RunRequest, RunResult
from tests.conftest import PROFILES, RunnerFactory

json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_like = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
# Inputs may hold things that are not JSON at all (sets, bytes, objects, NaN).
odd_values = (
    json_like | st.sets(st.integers(), max_size=2) | st.binary(max_size=8) | st.builds(object)
)

schemas: st.SearchStrategy[Any] = st.one_of(
    st.just({"type": "object"}),
    st.just({"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}),
    st.just({"type": 12}),
    st.just({"$ref": "http://example.com/x.json"}),
    st.just({"$ref": "#/$defs/missing"}),
    st.just({"type": "string", "format": "email"}),
    st.dictionaries(
        st.sampled_from(["type", "items", "enum", "minimum", "$ref"]), json_like, max_size=3
    ),
    st.booleans(),
)

template_bits = st.sampled_from(
    [
        "{{ x }}",
        "{{ artifacts.doc.text }}",
        "{% for i in range(3) %}{{ i }}{% endfor %}",
        "{{ x * 1000000000 }}",
        "{{ ''.__class__ }}",
        "{% include 'a' %}",
        "{{",
        "## user",
        "plain text",
        "{{ x | tojson }}",
    ]
)


def _prompt(schema: Any, body: str, output_format: str) -> str:
    front = {
        "profile": "offline",
        "artifacts": {"doc": {"required": False, "media_type": "text/*", "max_bytes": 64}},
        "output": {"format": output_format, "schema": schema},
    }
    if output_format != "json_schema":
        front["output"] = {"format": output_format}
    return "---\n" + json.dumps(front) + "\n---\n" + body + "\n"


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    schema=schemas,
    body=st.lists(template_bits | st.text(max_size=30), min_size=1, max_size=4).map("\n".join),
    output_format=st.sampled_from(["text", "json", "json_schema"]),
    inputs=st.dictionaries(st.sampled_from(["x", "y", "artifacts"]), odd_values, max_size=3),
    doc=st.none() | st.binary(max_size=100),
    output=st.text(max_size=80) | json_like.map(json.dumps),
)
def test_nothing_but_sentinels_escape(
    make_runner: RunnerFactory,
    schema: Any,
    body: str,
    output_format: str,
    inputs: dict[str, Any],
    doc: bytes | None,
    output: str,
) -> None:
    """Any prompt, schema, inputs, artifact bytes and model output: a result or a sentinel."""
    files: dict[str, bytes | str] = {} if doc is None else {"doc.txt": doc}
    runner = make_runner(
        FakeClient([output]),
        prompts={"fuzz": _prompt(schema, body, output_format)},
        profiles=PROFILES,
        files=files,
    )
    artifacts = {} if doc is None else {"doc": "doc.txt"}
    try:
        result = runner.run(RunRequest(prompt_id="fuzz", inputs=inputs, artifacts=artifacts))
    except ScriptoriumError as err:
        event(type(err).__name__)
        return
    event("result")
    assert isinstance(result, RunResult)
    assert result.output.text == output
