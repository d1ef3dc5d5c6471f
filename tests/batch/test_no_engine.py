"""The composition root stays at the top: no module of ``batch``, ``limits`` or ``check`` imports
the engine, not even inside a function or under ``TYPE_CHECKING``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import scriptorium

PACKAGE = Path(scriptorium.__file__).parent
MODULES = sorted(
    path for folder in ("batch", "limits", "check") for path in (PACKAGE / folder).rglob("*.py")
)


def _imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_batch_limits_or_check_module_imports_the_engine(path: Path) -> None:
    bad = {
        name
        for name in _imported(path)
        if name in ("scriptorium.engine", "scriptorium.Engine")
        or name.startswith("scriptorium.engine.")
    }
    assert not bad, f"{path.relative_to(PACKAGE)} imports {sorted(bad)}"
