"""The layout's rules, checked: ports and the use case import no adapters; imports stay lazy; the
public surface is exactly what ``__all__`` says."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

import scriptorium

PACKAGE = Path(scriptorium.__file__).parent

# Modules that pick concrete technology. The use case and the ports may not import any of them.
ADAPTER_MODULES = (
    "scriptorium.promptdef.files",
    "scriptorium.promptdef.memory",
    "scriptorium.promptdef.parse",
    "scriptorium.profile.files",
    "scriptorium.profile.memory",
    "scriptorium.profile.parse",
    "scriptorium.artifact.files",
    "scriptorium.artifact.memory",
    "scriptorium.prompt.jinja",
    "scriptorium.prompt._sandbox",
    "scriptorium.validate.schema",
    "scriptorium.validate.parse",
    "scriptorium.llm.anthropic",
    "scriptorium.llm.openai",
    "scriptorium.llm.fake",
    "scriptorium.llm.replay",
    "scriptorium.llm.router",
    "scriptorium.llm.retry",
    "scriptorium.llm._clients",
    "scriptorium.observe.otel",
    "scriptorium.engine",
    "scriptorium.cli",
    "scriptorium.kernel",
    "scriptorium.httpapi",
    "scriptorium.testing",
    "scriptorium._testing",
    "scriptorium._loading",
    "scriptorium._files",
)
THIRD_PARTY_ADAPTERS = (
    "jinja2",
    "jsonschema",
    "referencing",
    "yaml",
    "anthropic",
    "openai",
    "httpx",
    "opentelemetry",
)

PORT_MODULES = sorted(
    [p for p in PACKAGE.glob("*/model.py")]
    + [
        PACKAGE / "promptdef" / "repository.py",
        PACKAGE / "profile" / "repository.py",
        PACKAGE / "artifact" / "reader.py",
        PACKAGE / "prompt" / "renderer.py",
        PACKAGE / "validate" / "validator.py",
        PACKAGE / "llm" / "client.py",
    ]
)
USECASE_MODULES = sorted((PACKAGE / "usecase").glob("*.py"))


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _forbidden(imported: str) -> bool:
    return any(
        imported == m or imported.startswith(m + ".")
        for m in (*ADAPTER_MODULES, *THIRD_PARTY_ADAPTERS)
    )


@pytest.mark.parametrize(
    "path", USECASE_MODULES + PORT_MODULES, ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_use_case_and_ports_import_no_adapter(path: Path) -> None:
    """Dependencies point inward: no adapter module or adapter library in a port or the use case."""
    bad = sorted(i for i in _imports(path) if _forbidden(i))
    assert not bad, f"{path.relative_to(PACKAGE)} imports adapters: {bad}"


def test_the_architecture_check_catches_an_adapter_import(tmp_path: Path) -> None:
    """The check above is not vacuous: an adapter import is flagged."""
    sample = tmp_path / "sample.py"
    sample.write_text("from scriptorium.prompt.jinja import JinjaRenderer\nimport jsonschema\n")
    assert {i for i in _imports(sample) if _forbidden(i)} == {
        "scriptorium.prompt.jinja",
        "scriptorium.prompt.jinja.JinjaRenderer",
        "jsonschema",
    }


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_scriptorium_is_light() -> None:
    """import scriptorium loads no provider SDK, jsonschema or jinja2."""
    loaded = _modules_after("import scriptorium")
    for heavy in ("anthropic", "openai", "jsonschema", "jinja2", "httpx", "opentelemetry"):
        assert heavy not in loaded


def test_engine_and_testing_do_not_load_provider_sdks() -> None:
    """Building an Engine and the testing kit never imports a provider SDK."""
    loaded = _modules_after(
        "from scriptorium import Engine\nimport scriptorium.testing\nEngine('.')"
    )
    assert "anthropic" not in loaded
    assert "openai" not in loaded
    assert "opentelemetry" not in loaded


def test_dunder_all_matches_the_public_surface() -> None:
    """Every name in scriptorium.__all__ resolves, and nothing public is left out of it."""
    for name in scriptorium.__all__:
        assert getattr(scriptorium, name) is not None
    exported = set(scriptorium.__all__)
    defined = {
        n
        for n in vars(scriptorium)
        if not n.startswith("_")
        and n not in {"annotations", "importlib", "TYPE_CHECKING", "Any"}
        and not isinstance(getattr(scriptorium, n), types.ModuleType)
    }
    assert defined - {"errors"} <= exported
    assert exported == set(scriptorium._LAZY) | {"ScriptoriumError", "__version__", "errors"}


@pytest.mark.parametrize(
    "module_name",
    [
        "scriptorium.errors",
        "scriptorium.hashing",
        "scriptorium.promptdef",
        "scriptorium.profile",
        "scriptorium.artifact",
        "scriptorium.prompt",
        "scriptorium.validate",
        "scriptorium.llm",
        "scriptorium.usecase",
        "scriptorium.testing",
    ],
)
def test_every_package_all_resolves(module_name: str) -> None:
    """Each package's __all__ names something real."""
    module = importlib.import_module(module_name)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{module_name}.{name}"


def test_importing_the_engine_builds_no_model() -> None:
    """``from scriptorium import Engine`` (what every user runs first) imports no pydantic: the
    models load when an Engine is built, so the import itself stays in milliseconds."""
    loaded = _modules_after("from scriptorium import Engine")
    assert "pydantic" not in loaded
    assert "scriptorium.usecase.runner" not in loaded
