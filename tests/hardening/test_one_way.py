"""The shared mechanisms stay the only ones: YAML is parsed by the strict loader alone, and files
are not read around the bounded reader (``Path.read_text`` / ``read_bytes`` block on a FIFO and
read a device without end)."""

from __future__ import annotations

import ast
from pathlib import Path

import scriptorium

PACKAGE = Path(scriptorium.__file__).parent
YAML_PARSERS = {"load", "safe_load", "full_load", "unsafe_load", "load_all", "safe_load_all"}
UNBOUNDED_READS = {"read_text", "read_bytes"}


def calls(path: Path) -> list[tuple[str, str, int]]:
    """(object name or '', attribute, line) of every attribute call in the module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = owner.id if isinstance(owner, ast.Name) else ""
            found.append((name, node.func.attr, node.lineno))
    return found


def test_only_the_strict_loader_parses_yaml() -> None:
    """No module but _loading.py calls PyYAML's parsers."""
    offenders = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in PACKAGE.rglob("*.py")
        if path.name != "_loading.py"
        for owner, attr, line in calls(path)
        if owner == "yaml" and attr in YAML_PARSERS
    ]
    assert offenders == []


def test_no_module_reads_files_around_the_bounded_reader() -> None:
    """read_text / read_bytes appear nowhere in the package."""
    offenders = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in PACKAGE.rglob("*.py")
        for _, attr, line in calls(path)
        if attr in UNBOUNDED_READS
    ]
    assert offenders == []
