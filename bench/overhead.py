"""Row 3: what scriptorium adds per run on its own — prepare (load, merge, key, schema, inputs,
artifacts), render, hash, validate and build the result — with ``FakeClient`` standing in for the
model, caches warm, and how that grows with the template, the artifacts and the schema."""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.stats import Summary, summarize

__all__ = ["CASES", "Case", "measure_overhead"]


@dataclass(frozen=True)
class Case:
    """One prompt shape: template bytes, number of 1 KB artifacts, schema properties."""

    label: str
    template_bytes: int = 1024
    artifacts: int = 0
    properties: int = 3


CASES: tuple[Case, ...] = (
    Case("small: 1 KB template, 3-property schema"),
    Case("template 10 KB", template_bytes=10 * 1024),
    Case("template 100 KB", template_bytes=100 * 1024),
    Case("1 artifact (1 KB)", artifacts=1),
    Case("8 artifacts (1 KB each)", artifacts=8),
    Case("32 artifacts (1 KB each)", artifacts=32),
    Case("schema 11 properties + nested array (the extraction)", properties=-1),
    Case("schema 30 properties", properties=30),
    Case("schema 100 properties", properties=100),
)

_FILLER = "The quarterly figures are summarised below for {{ audience }}; keep the tone plain. "


def _schema(properties: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A schema with ``properties`` properties and an instance of it (-1: the extraction's)."""
    if properties < 0:
        from bench.task import INSTANCE, SCHEMA

        return SCHEMA, INSTANCE
    kinds = ("string", "integer", "number", "boolean")
    values: dict[str, Any] = {"string": "text", "integer": 7, "number": 2.5, "boolean": True}
    props = {f"field_{i}": {"type": kinds[i % 4]} for i in range(properties)}
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": sorted(props),
        "properties": props,
    }
    return schema, {name: values[spec["type"]] for name, spec in props.items()}


def _template(size: int, artifacts: int) -> str:
    body = ""
    while len(body) < size:
        body += _FILLER
    parts = ["## system", "You answer in JSON only.", "", "## user", body[:size]]
    parts += [f"{{{{ artifacts.doc{i}.text }}}}" for i in range(artifacts)]
    return "\n".join(parts)


def _project(case: Case) -> tuple[Path, dict[str, str], str]:
    root = Path(tempfile.mkdtemp(prefix="scriptorium-overhead-"))
    (root / "prompts").mkdir()
    (root / "profiles").mkdir()
    (root / "docs").mkdir()
    schema, instance = _schema(case.properties)
    (root / "prompts" / "out.schema.json").write_text(json.dumps(schema), encoding="utf-8")
    declared = "".join(
        f"  doc{i}: {{required: true, media_type: text/plain}}\n" for i in range(case.artifacts)
    )
    front = [
        "---",
        "profile: fake",
        "inputs:",
        "  type: object",
        "  required: [audience]",
        "  properties: {audience: {type: string}}",
        *(["artifacts:", declared.rstrip("\n")] if case.artifacts else []),
        "output:",
        "  format: json_schema",
        "  schema: out.schema.json",
        "---",
    ]
    text = "\n".join(front) + "\n" + _template(case.template_bytes, case.artifacts)
    (root / "prompts" / "bench.prompt.md").write_text(text, encoding="utf-8")
    (root / "profiles" / "fake.yaml").write_text("provider: fake\nmodel: fake\n", encoding="utf-8")
    refs: dict[str, str] = {}
    for i in range(case.artifacts):
        (root / "docs" / f"doc{i}.txt").write_text("lorem ipsum " * 85, encoding="utf-8")
        refs[f"doc{i}"] = f"docs/doc{i}.txt"
    return root, refs, json.dumps(instance)


def measure_overhead(case: Case, *, runs: int, blocks: int) -> Summary:
    """Microseconds per ``Engine.run`` with a ``FakeClient`` (median of ``blocks`` blocks)."""
    from scriptorium import Engine
    from scriptorium.llm.model import LLMResponse, Usage
    from scriptorium.testing import FakeClient

    root, refs, output = _project(case)
    client = FakeClient([LLMResponse(text=output, model="fake", usage=Usage())])
    engine = Engine(root, client=client)
    inputs = {"audience": "the board"}
    for _ in range(20):  # warm every cache (definition, schema, template, artifacts)
        result = engine.run("bench", inputs=inputs, artifacts=refs)
        if not result.validation.valid:
            raise AssertionError(f"overhead case {case.label!r} is invalid: {result.validation}")
    per_run: list[float] = []
    for _ in range(blocks):
        client.requests.clear()
        start = time.perf_counter()
        for _ in range(runs):
            engine.run("bench", inputs=inputs, artifacts=refs)
        per_run.append((time.perf_counter() - start) / runs * 1e6)
    return summarize(per_run)
