"""``check`` over a project view built without an engine (file or in-memory adapters, any
provider catalog), which provider names it refuses, and provider plugins that do not load: a
warning that never fails ``check``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scriptorium import Engine
from scriptorium.check.problems import WARNINGS, Problem
from scriptorium.check.project import check_project
from scriptorium.check.view import ProjectView, TemplateHelpers
from scriptorium.llm.registry import ProviderSpec, Registry
from scriptorium.profile.files import FileRepository as ProfileFiles
from scriptorium.prompt.jinja import (
    check_syntax,
    template_artifact_fields,
    template_artifacts,
    template_variables,
)
from scriptorium.promptdef.files import FileRepository as PromptFiles
from scriptorium.testing import MemoryProfileRepository, MemoryPromptRepository
from scriptorium.validate.schema import SchemaValidator

JINJA = TemplateHelpers(
    syntax=check_syntax,
    variables=template_variables,
    artifacts=template_artifacts,
    artifact_fields=template_artifact_fields,
)
UNDECLARED = "---\nprofile: good\n---\nHello {{ who }}\n"


def _kinds(problems: list[Problem]) -> list[tuple[str, str]]:
    return [(p.file, p.kind) for p in problems]


def _on_disk(root: Path) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "hello.prompt.md").write_text(UNDECLARED, encoding="utf-8")
    (root / "profiles" / "good.yaml").write_text("provider: fake\n", encoding="utf-8")
    (root / "profiles" / "odd.yaml").write_text("provider: nosuch\n", encoding="utf-8")
    return root


def _file_view(root: Path, **overrides: object) -> ProjectView:
    fields: dict[str, object] = {
        "root": root,
        "prompts_dir": root / "prompts",
        "profiles_dir": root / "profiles",
        "prompts": PromptFiles(root / "prompts"),
        "profiles": ProfileFiles(root / "profiles"),
        "validator": SchemaValidator(root / "prompts"),
        "templates": JINJA,
        "providers": Registry(entry_points=False),
        "known_providers": None,
    }
    fields.update(overrides)
    return ProjectView(**fields)  # type: ignore[arg-type]  # the test's own field mapping


def test_a_view_of_file_adapters_finds_what_the_engines_check_finds(tmp_path: Path) -> None:
    root = _on_disk(tmp_path)
    registry = Registry(entry_points=False)
    view = _file_view(root, providers=registry, known_providers=registry.names())
    assert check_project(view) == Engine(root).check()
    assert _kinds(check_project(view)) == [
        ("profiles/odd.yaml", "profile_invalid"),
        ("prompts/hello.prompt.md", "undeclared_variable"),
    ]


def test_without_known_providers_any_provider_name_goes(tmp_path: Path) -> None:
    """As with an injected client, which serves every profile whatever its provider."""
    view = _file_view(_on_disk(tmp_path))
    assert _kinds(check_project(view)) == [("prompts/hello.prompt.md", "undeclared_variable")]


def test_a_view_over_memory_repositories_checks_what_they_hold(tmp_path: Path) -> None:
    """The definitions come from the view's repositories; only file-level checks read disk."""
    (tmp_path / "prompts").mkdir()
    view = ProjectView(
        root=tmp_path,
        prompts_dir=tmp_path / "prompts",
        profiles_dir=tmp_path / "profiles",
        prompts=MemoryPromptRepository(
            {"hello": UNDECLARED, "lost": "---\nprofile: gone\n---\nHi"}
        ),
        profiles=MemoryProfileRepository({"good": {"provider": "fake"}}),
        validator=SchemaValidator(),
        templates=JINJA,
        providers=Registry(entry_points=False),
    )
    assert [(p.kind, p.message) for p in check_project(view)] == [
        ("undeclared_variable", "template user[0] uses 'who', but the prompt has no inputs "
         "(add it to inputs.properties)"),
        ("profile_missing", "names profile 'gone', which is not under profiles/"),
    ]  # fmt: skip


class BrokenPlugins:
    """A provider catalog whose plugins failed to load."""

    def __init__(self, problems: tuple[str, ...]) -> None:
        self._registry = Registry(entry_points=False)
        self._problems = problems

    def find(self, name: str) -> ProviderSpec | None:
        return self._registry.find(name)

    @property
    def problems(self) -> tuple[str, ...]:
        return self._problems


def test_a_plugin_that_does_not_load_is_a_warning(tmp_path: Path) -> None:
    root = _on_disk(tmp_path)
    (root / "profiles" / "odd.yaml").unlink()
    (root / "prompts" / "hello.prompt.md").write_text("---\nprofile: good\n---\nHi\n")
    message = "entry point 'broken' (no_such_module:SPEC) does not load: ModuleNotFoundError"
    problems = check_project(_file_view(root, providers=BrokenPlugins((message,))))
    assert problems == [Problem("scriptorium.providers", "provider_plugin", message)]
    assert "provider_plugin" in WARNINGS
    assert problems[0].severity == "warning"


def _broken_plugin(site: Path) -> Path:
    """A distribution on ``site`` declaring a provider entry point that cannot be imported."""
    info = site / "broken_provider-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: broken-provider\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[scriptorium.providers]\nbroken = no_such_module_for_scriptorium:SPEC\n", encoding="utf-8"
    )
    return site


def test_an_installed_plugin_that_does_not_load_is_reported_by_the_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = _broken_plugin(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    root = _on_disk(tmp_path / "project")
    (root / "profiles" / "odd.yaml").unlink()
    registry = Registry()
    problems = check_project(_file_view(root, providers=registry))
    plugin = [p for p in problems if p.kind == "provider_plugin"]
    assert len(plugin) == 1
    assert "'broken'" in plugin[0].message
    assert "ModuleNotFoundError" in plugin[0].message


def test_scriptorium_check_warns_about_a_broken_plugin_and_still_succeeds(tmp_path: Path) -> None:
    site = _broken_plugin(tmp_path / "site")
    root = _on_disk(tmp_path / "project")
    (root / "profiles" / "odd.yaml").unlink()
    (root / "prompts" / "hello.prompt.md").write_text("---\nprofile: good\n---\nHi\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-m", "scriptorium", "check", "--root", str(root)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "scriptorium.providers: provider_plugin (warning): entry point 'broken'" in done.stdout
    assert "no problems, 1 warning" in done.stdout
