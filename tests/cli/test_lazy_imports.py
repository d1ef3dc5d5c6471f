"""A command loads only what it uses: which modules ``scriptorium run --help`` and a run import,
read from a fresh interpreter's ``sys.modules`` (module lists, never times)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: What no ``run`` needs: the batch and serve commands and what only they use, the SDKs of a
#: fake profile.
NEVER_FOR_RUN = (
    "scriptorium.cli.batch",
    "scriptorium.cli.batch_records",
    "scriptorium.cli.provider_batch",
    "scriptorium.cli.serve",
    "scriptorium.batch",
    "scriptorium.httpapi",
    "scriptorium.cli.mcp",
    "scriptorium.mcp",
    "mcp",
    "anthropic",
    "openai",
)
#: What a run needs only for a schema (inputs or output).
SCHEMA_ONLY = ("jsonschema", "referencing", "jsonschema_specifications")

_PROBE = """
import json, sys
from scriptorium.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
print("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _imported(cwd: Path, *argv: str) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    last = done.stdout.strip().splitlines()[-1]
    found = json.loads(last)
    return int(found["code"]), set(found["modules"])


def _loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    """A project with a prompt that has no schema at all, on the fake provider."""
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "hi.prompt.md").write_text(
        "---\nprofile: offline\n---\n## user\nSay hi.\n", encoding="utf-8"
    )
    (tmp_path / "profiles" / "offline.yaml").write_text(
        "provider: fake\nmodel: fake-1\noptions: {responses: ['Hi.']}\n", encoding="utf-8"
    )
    return tmp_path


def test_run_help_loads_no_engine_no_batch_and_no_schema_library(plain: Path) -> None:
    code, modules = _imported(plain, "run", "--help")
    assert code == 0
    assert _loaded(modules, NEVER_FOR_RUN) == []
    assert _loaded(modules, SCHEMA_ONLY) == []
    assert _loaded(modules, ("scriptorium.engine", "scriptorium.usecase", "jinja2")) == []


def test_a_run_without_a_schema_loads_neither_the_batch_code_nor_jsonschema(plain: Path) -> None:
    code, modules = _imported(plain, "run", "hi")
    assert code == 0
    assert "scriptorium.engine" in modules
    assert _loaded(modules, NEVER_FOR_RUN) == []
    assert _loaded(modules, SCHEMA_ONLY) == []


def test_a_run_with_a_schema_loads_jsonschema_but_not_the_batch_code() -> None:
    code, modules = _imported(
        REPO, "run", "extract/contact", "--artifact", "document=examples/contact.txt"
    )
    assert code == 0
    assert "jsonschema" in modules
    assert _loaded(modules, NEVER_FOR_RUN) == []


def test_the_batch_command_loads_the_batch_code_but_not_serve(plain: Path) -> None:
    (plain / "in.jsonl").write_text("{}\n", encoding="utf-8")
    code, modules = _imported(plain, "batch", "hi", "--in", "in.jsonl", "--out", "out.jsonl")
    assert code == 0
    assert "scriptorium.cli.batch" in modules
    assert "scriptorium.batch.pipeline" in modules
    assert _loaded(modules, ("scriptorium.cli.serve", "scriptorium.httpapi", "ray")) == []
    # A local batch needs neither the provider-batch job nor the provider-batch command.
    assert "scriptorium.batch.job" not in modules
    assert "scriptorium.cli.provider_batch" not in modules
