"""The README stays true: its tour commands and Python examples run as written, offline."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from scriptorium.cli import main

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.DOTALL)


def tour_lines() -> list[str]:
    """The shell lines of the tour (the set-up commands, which install, are not among them)."""
    tour = README[README.index("## A five-minute tour") :]
    found = re.findall(r"```sh\n(.*?)```", tour, re.DOTALL)
    return [line for block in found for line in block.splitlines() if line.strip()]


def test_the_setup_commands_are_the_ones_ci_runs() -> None:
    """The two set-up commands are Makefile targets: the offline main job and the test suite,
    and CI runs the same test target after the lint target."""
    setup = README[README.index("## Set up") : README.index("## A five-minute tour")]
    first, second = (block.strip() for block in re.findall(r"```sh\n(.*?)```", setup, re.DOTALL))
    assert (first, second) == ("make demo", "make test")
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "scriptorium run extract/contact -p offline -a document=examples/contact.txt" in makefile
    assert 'pytest -q -m "not slow"' in makefile
    assert "ci: lint test" in makefile
    assert "make ci" in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_every_tour_command_runs_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    lines = tour_lines()
    assert len(lines) >= 8
    for line in lines:
        command = line.split("  #")[0].strip().replace("/tmp/", f"{tmp_path}/")
        if command.startswith("scriptorium "):
            status = main(shlex.split(command)[1:])
            captured = capsys.readouterr()
            assert status == 0, f"{line}\n{captured.err}"
        else:
            subprocess.run(["bash", "-c", command], check=True, cwd=REPO)


def test_every_python_example_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    # A block whose first line says what it needs (a collector, a key) is shown, not run here.
    examples = [b for b in blocks("python") if not b.startswith("# needs:")]
    assert len(examples) >= 3
    for number, source in enumerate(examples):
        namespace: dict[str, object] = {}
        exec(compile(source, f"README python block {number}", "exec"), namespace)  # noqa: S102
        for name, value in namespace.items():
            if name.startswith("test_") and callable(value):
                value()
    assert "set ANTHROPIC_API_KEY" in capsys.readouterr().out
