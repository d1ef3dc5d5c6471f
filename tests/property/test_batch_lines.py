"""Hypothesis over the bytes of a batch's ``--in``: good lines whose strings hold U+2028, U+0085
and other characters ``str.splitlines()`` would split at, CRLF endings, blank lines, raw NUL and
other broken JSON, lines nested deeper than a parser can follow, and bytes that are not UTF-8.
Lines are split at ``\\n`` only, so every non-blank line gets exactly one record, numbered as the
file numbers it, a good line's text arrives whole, and no input makes the command crash."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scriptorium.cli import main

GREET = """---
profile: offline
inputs: {type: object, required: [name], properties: {name: {type: string}}}
---
Hello {{ name }}!
"""

#: Characters a good line's string may hold raw (JSON allows them unescaped).
SEPARATORS = ["\u2028", "\u2029", "\u0085", "\u000b", "\u000c", "\u001c", "\u001e", "\ufeff"]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("batch-lines")
    (root / "prompts").mkdir()
    (root / "profiles").mkdir()
    (root / "prompts" / "greet.prompt.md").write_text(GREET, encoding="utf-8")
    (root / "profiles" / "offline.yaml").write_text(
        "provider: fake\nmodel: fake-1\noptions: {responses: ['Hi.']}\n", encoding="utf-8"
    )
    return root


@pytest.fixture
def inside(project: Path) -> Iterator[Path]:
    before = os.getcwd()
    os.chdir(project)
    try:
        yield project
    finally:
        os.chdir(before)


NAMES = st.text(
    alphabet=st.sampled_from([*SEPARATORS, "a", "é", " ", "\t", "\\", '"']), min_size=1, max_size=8
)


@st.composite
def lines(draw: st.DrawFn) -> tuple[bytes, str | None]:
    """One input line's bytes, and the name it carries when it is a good line."""
    kind = draw(st.sampled_from(["good", "good", "good", "blank", "nul", "broken", "deep"]))
    if kind == "good":
        name = draw(NAMES)
        return json.dumps({"inputs": {"name": name}}, ensure_ascii=False).encode(), name
    if kind == "blank":
        return draw(st.sampled_from([b"", b"   ", b"\t", b"\r"])), None
    if kind == "nul":
        return b'{"inputs": {"name": "a\x00b"}}', None
    if kind == "broken":
        return draw(st.sampled_from([b"{", b"[1, 2", b"not json", b'{"inputs": 5}', b"[]"])), None
    depth = draw(st.sampled_from([2_000, 100_000]))
    return b'{"inputs": {"name": ' + b"[" * depth + b"]" * depth + b"}}", None


@st.composite
def inputs(draw: st.DrawFn) -> tuple[bytes, list[tuple[bytes, str | None]], bool]:
    """The file, its lines, and whether it is valid UTF-8."""
    chosen = draw(st.lists(lines(), min_size=1, max_size=6))
    ending = draw(st.sampled_from([b"\n", b"\r\n"]))
    data = ending.join(line for line, _ in chosen) + draw(st.sampled_from([ending, b""]))
    broken = draw(st.booleans()) and draw(st.booleans())  # now and then, not UTF-8 at all
    if broken:
        data = data + b"\xff\xfe\n"
    return data, chosen, not broken


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=inputs())
def test_batch_input_bytes_are_split_at_newlines_only(
    inside: Path, capsys: pytest.CaptureFixture[str], case: tuple[bytes, list[Any], bool]
) -> None:
    data, chosen, utf8 = case
    source, out = inside / "in.jsonl", inside / "out.jsonl"
    source.write_bytes(data)
    out.unlink(missing_ok=True)
    (inside / "out.jsonl.partial").unlink(missing_ok=True)
    code = main(["batch", "greet", "--in", str(source), "--out", str(out)])
    err = capsys.readouterr().err
    assert "internal" not in err
    assert "Traceback" not in err
    if not utf8:
        assert code == 2
        assert not out.exists()
        return
    assert code in (0, 1), err
    expected = [
        (number, name)
        for number, (line, name) in enumerate(chosen, start=1)
        if line.strip() not in (b"", b"\r")
    ]
    records = _records(out)
    assert [r["line"] for r in records] == [number for number, _ in expected]
    for record, (_, name) in zip(records, expected, strict=True):
        if name is None:
            assert "error" in record
        else:
            assert record["valid"] is True, record
            assert record["result"]["prepared"]["messages"][0]["content"] == f"Hello {name}!"
