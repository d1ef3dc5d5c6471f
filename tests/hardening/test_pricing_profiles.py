"""Fault 1 (fixed with the pricing work): a partial ``pricing`` table runs, and a bad one is a
profile problem that ``check`` and ``verify`` report, never a raw pydantic error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scriptorium import Engine
from scriptorium.cli import main
from scriptorium.errors import ProfileLoadError

PARTIAL = ["{input: 3.0, output: 15.0}", "{input: 3.0, output: 15.0, cache_read: null}"]
BAD = ["{input: -1, output: 15.0}", "{input: abc, output: 1}", "{output: 1}", "[1, 2]"]


def project(root: Path, pricing: str) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "p.prompt.md").write_text(
        "---\nprofile: p\ninputs: {type: object, properties: {n: {type: integer}}}\n---\nhi {{ n }}\n"
    )
    (root / "profiles" / "p.yaml").write_text(
        f"provider: fake\nmodel: m\npricing: {pricing}\noptions: {{responses: [ok]}}\n"
    )
    return root


@pytest.mark.parametrize("pricing", PARTIAL)
def test_a_partial_pricing_table_runs_and_batches(tmp_path: Path, pricing: str) -> None:
    """run, check and batch all work with cache prices left out or null."""
    root = project(tmp_path, pricing)
    engine = Engine(root)
    assert engine.run("p", inputs={"n": 1}).output.text == "ok"
    assert engine.check() == []
    rows = tmp_path / "in.jsonl"
    rows.write_text("".join(json.dumps({"inputs": {"n": n}}) + "\n" for n in range(3)))
    out = tmp_path / "out.jsonl"
    argv = ["batch", "p", "--in", str(rows), "--out", str(out), "--root", str(root)]
    assert main(argv) == 0
    assert len(out.read_text().splitlines()) == 3


@pytest.mark.parametrize("pricing", BAD)
def test_a_bad_pricing_table_is_reported_by_check_verify_and_run(
    tmp_path: Path, pricing: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """check lists it under the profile; verify and run exit 4 with a profile_load line."""
    root = project(tmp_path, pricing)
    problems = Engine(root).check()
    assert [(p.file, p.kind) for p in problems] == [("profiles/p.yaml", "profile_invalid")]
    assert "pricing" in problems[0].message
    with pytest.raises(ProfileLoadError):
        Engine(root).prepare("p", inputs={"n": 1})
    assert main(["verify", "-p", "p", "--root", str(root)]) == 4
    assert main(["run", "p", "--root", str(root), "-i", "n=1"]) == 4
    assert "profile_load" in capsys.readouterr().err
