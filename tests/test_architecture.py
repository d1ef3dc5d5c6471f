"""The layout's rules, checked: ports and the use case load no adapters (by their own imports and
transitively); imports stay lazy; no import cycles; no private name used across modules; the
public surface of every public package is exactly the pinned ``__all__``."""

from __future__ import annotations

import ast
import fnmatch
import importlib
import json
import os
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest

import scriptorium
from scriptorium.llm.registry import BUILTIN, Lazy, Registry

PACKAGE = Path(scriptorium.__file__).parent


def _provider_module(target: str) -> str:
    """The package (or module) of a built-in provider, from its registry entry
    ``module:attribute``: ``scriptorium.llm.gemini.spec:SPEC`` is ``scriptorium.llm.gemini``."""
    module = target.split(":", 1)[0]
    return module.removesuffix(".spec")


#: Every built-in provider's package, as the registry lists them: a provider added to the
#: registry is held to every rule below without this file naming it.
PROVIDER_MODULES = tuple(sorted({_provider_module(t) for t in BUILTIN.values()}))
#: The SDKs the built-in providers import (each spec names its own).
PROVIDER_SDKS = tuple(
    sorted(
        {
            spec.sdk_module
            for name in BUILTIN
            if (spec := Registry().find(name)) is not None and spec.sdk_module
        }
    )
)

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
    "scriptorium.validate.schema.validator",
    "scriptorium.validate.json.strict",
    *PROVIDER_MODULES,
    "scriptorium.llm.router",
    "scriptorium.llm.retry",
    "scriptorium.llm._clients",
    "scriptorium.observe.otel",
    "scriptorium.engine",
    "scriptorium.cli",
    "scriptorium.kernel",
    "scriptorium.httpapi",
    "scriptorium.mcp",
    "scriptorium.pytest_plugin",
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
    *PROVIDER_SDKS,
    "httpx",
    "opentelemetry",
    "mcp",
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


def _provider_files(module: str) -> list[Path]:
    path = PACKAGE.parent.joinpath(*module.split("."))
    return sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]


def _mentions_provider(node: ast.expr) -> bool:
    """Whether ``node`` is a name or attribute whose identifier says it holds a provider."""
    if isinstance(node, ast.Name):
        return "provider" in node.id
    if isinstance(node, ast.Attribute):
        return "provider" in node.attr
    return False


def _names_provider(node: ast.AST, names: set[str]) -> str | None:
    """The provider name a comparison of a provider (``x.provider == "openai"``,
    ``provider in ("a", "b")``) holds as a string literal, if any."""
    if not isinstance(node, ast.Compare):
        return None
    sides = (node.left, *node.comparators)
    if not any(_mentions_provider(side) for side in sides):
        return None
    for side in sides:
        values = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
        for value in values:
            if isinstance(value, ast.Constant) and value.value in names:
                return str(value.value)
    return None


@pytest.mark.parametrize("module", PROVIDER_MODULES)
def test_a_provider_package_imports_no_other_provider(module: str) -> None:
    """Each provider package stands alone: what two providers share lives in the shared machinery
    of ``llm/``, never in one provider imported by another."""
    others = [m for m in PROVIDER_MODULES if m != module]
    bad = sorted(
        f"{path.relative_to(PACKAGE)}: {imported}"
        for path in _provider_files(module)
        for imported in _imports(path)
        if any(imported == o or imported.startswith(o + ".") for o in others)
    )
    assert not bad, bad


def test_no_module_outside_a_provider_package_compares_a_provider_name() -> None:
    """Provider knowledge reaches the rest of the package through the registry: no module outside
    the provider packages tests a provider's name against a string literal."""
    names = set(BUILTIN)
    inside = {path for module in PROVIDER_MODULES for path in _provider_files(module)}
    inside.add(PACKAGE / "llm" / "registry.py")
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in inside or "_testing" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = _names_provider(node, names)
            if name is not None:
                bad.append(
                    f"{path.relative_to(PACKAGE)}:{getattr(node, 'lineno', 0)} compares {name!r}"
                )
    assert not bad, bad


def test_the_provider_name_check_catches_a_comparison() -> None:
    """The check above is not vacuous: a provider compared to a built-in's name is flagged, and a
    comparison of something else with the same word is not."""
    names = set(BUILTIN)
    flagged = ('profile.provider == "openai"', 'provider in ("x", "anthropic")')
    for code in flagged:
        assert _names_provider(ast.parse(code, mode="eval").body, names) is not None, code
    assert (
        _names_provider(ast.parse('mode in ("record", "replay")', mode="eval").body, names) is None
    )


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


def test_the_schema_package_loads_its_validator_only_when_asked() -> None:
    """``scriptorium.validate.schema`` names ``SchemaValidator`` lazily: importing the package or
    its helpers (``refs``, ``patterns``) loads neither the validator module nor jsonschema, and the
    name, once asked for, is the class ``scriptorium.validate`` gives."""
    loaded = _modules_after(
        "import scriptorium.validate.schema, scriptorium.validate.schema.refs, "
        "scriptorium.validate.schema.patterns"
    )
    assert "jsonschema" not in loaded
    assert "scriptorium.validate.schema.validator" not in loaded
    from scriptorium import validate
    from scriptorium.validate import schema

    assert schema.SchemaValidator is validate.SchemaValidator
    assert schema.SchemaValidator.__module__ == "scriptorium.validate.schema.validator"


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


# --- the dependency rule, followed transitively -------------------------------------------------
#
# The checks above read each module's own import lines. What matters is what importing a module
# *loads*: a port that imports a harmless-looking helper which imports an SDK breaks the rule as
# surely as importing the SDK itself. So every use-case and port module is imported and
# ``sys.modules`` read afterwards.

#: What the use case and the ports must never load, directly or through anything they import. An
#: entry names a module and everything under it; an entry with ``*`` is a pattern.
TRANSITIVE_ADAPTERS = (
    # every provider package the registry lists
    *(f"{m}*" for m in PROVIDER_MODULES),
    # the machinery only adapters use
    "scriptorium.llm._clients",
    "scriptorium.llm.router",
    "scriptorium.llm.retry",
    # request body, schema and cache builders, wherever they live
    "scriptorium.llm.*body",
    "scriptorium.llm.*schema",
    "scriptorium.llm.*cache",
    # the file, parsing, template and schema adapters of the other packages
    "scriptorium.promptdef.files",
    "scriptorium.promptdef.parse",
    "scriptorium.profile.files",
    "scriptorium.profile.parse",
    "scriptorium.artifact.files",
    "scriptorium.prompt.jinja",
    "scriptorium.prompt._sandbox",
    "scriptorium.validate.schema.validator",
    # the composition root and the entry points
    "scriptorium.engine",
    "scriptorium.cli",
    "scriptorium.kernel",
    "scriptorium.httpapi",
    "scriptorium.mcp",
    "scriptorium.pytest_plugin",
    "scriptorium.batch",
    "scriptorium.check",
)
TRANSITIVE_LIBRARIES = (
    "jinja2",
    "jsonschema",
    "referencing",
    "yaml",
    *PROVIDER_SDKS,
    "httpx",
    "httpx2",  # what newer provider SDKs call httpx
    "opentelemetry",
    "mcp",
    "mcp_types",
)

#: The port modules: each package's model and the Protocol modules the use case holds.
TRANSITIVE_PORTS = (
    *sorted(PACKAGE.glob("*/model.py")),
    PACKAGE / "promptdef" / "repository.py",
    PACKAGE / "profile" / "repository.py",
    PACKAGE / "artifact" / "reader.py",
    PACKAGE / "prompt" / "renderer.py",
    PACKAGE / "validate" / "validator.py",
    PACKAGE / "llm" / "client.py",
    PACKAGE / "llm" / "registry.py",
)


def _module_name(path: Path, root: Path = PACKAGE.parent) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


INWARD_MODULES = list(
    dict.fromkeys(
        [_module_name(p) for p in sorted((PACKAGE / "usecase").rglob("*.py"))]
        + [_module_name(p) for p in TRANSITIVE_PORTS if p.exists()]
    )
)


def _matches(name: str, entry: str) -> bool:
    if "*" in entry:
        return fnmatch.fnmatchcase(name, entry) or fnmatch.fnmatchcase(name, entry + ".*")
    return name == entry or name.startswith(entry + ".")


def _adapters_in(loaded: Iterable[str]) -> list[str]:
    return sorted(
        name
        for name in loaded
        if any(_matches(name, entry) for entry in (*TRANSITIVE_ADAPTERS, *TRANSITIVE_LIBRARIES))
    )


# Imports each module named on the command line as if in a fresh interpreter: after each one,
# every module it loaded is dropped from sys.modules again, so the next starts from the same
# state. One process instead of one per module keeps the whole check to a few seconds.
_PROBE = """
import importlib, json, sys
before = set(sys.modules)
loaded = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as err:
        loaded[name] = ["!" + type(err).__name__ + ": " + str(err)]
    else:
        loaded[name] = sorted(set(sys.modules) - before)
    for module in set(sys.modules) - before:
        del sys.modules[module]
print(json.dumps(loaded))
"""


def _loaded_by(modules: Sequence[str], path: Sequence[Path] = ()) -> dict[str, list[str]]:
    """What importing each of ``modules`` loads, each measured from a clean ``sys.modules``."""
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = os.pathsep.join([*map(str, path), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *modules],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=120,
    )
    loaded: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


@pytest.fixture(scope="module")
def loaded_by_inward_modules() -> dict[str, list[str]]:
    return _loaded_by(INWARD_MODULES)


@pytest.mark.parametrize("module_name", INWARD_MODULES)
def test_use_case_and_ports_load_no_adapter_transitively(
    module_name: str, loaded_by_inward_modules: dict[str, list[str]]
) -> None:
    """Importing a use-case or port module loads no adapter module and no adapter library, not
    even through the modules it imports."""
    loaded = loaded_by_inward_modules[module_name]
    assert not any(m.startswith("!") for m in loaded), f"{module_name} failed to import: {loaded}"
    bad = _adapters_in(loaded)
    assert not bad, f"importing {module_name} loads adapters: {bad}"


def test_the_transitive_check_catches_an_adapter_loaded_through_a_helper(tmp_path: Path) -> None:
    """Not vacuous: a module whose own imports look clean, but whose helper imports the Jinja
    renderer and yaml, is flagged for both; a clean one is not."""
    (tmp_path / "sample_helper.py").write_text("import scriptorium.prompt.jinja\nimport yaml\n")
    (tmp_path / "sample_port.py").write_text("import sample_helper\n")
    (tmp_path / "sample_clean.py").write_text("import scriptorium.llm.model\n")
    loaded = _loaded_by(["sample_port", "sample_clean"], path=[tmp_path])
    flagged = _adapters_in(loaded["sample_port"])
    assert "scriptorium.prompt.jinja" in flagged
    assert "yaml" in flagged
    assert "jinja2" in flagged
    assert _adapters_in(loaded["sample_clean"]) == []


def test_the_transitive_check_matches_a_fresh_interpreter() -> None:
    """The shared-process measurement is what a fresh interpreter loads (for the heaviest module
    measured, the runner when it exists): dropping modules between imports hides nothing."""
    name = "scriptorium.usecase.runner"
    if name not in INWARD_MODULES:
        name = INWARD_MODULES[-1]
    fresh = _modules_after(f"import sys\n_before = set(sys.modules)\nimport {name}")
    baseline = _modules_after("import sys")
    shared = _loaded_by(["json", name])[name]  # another import first: state is reset between
    ours = {m for m in fresh - baseline if m.startswith("scriptorium")}
    assert ours == {m for m in shared if m.startswith("scriptorium")}
    assert _adapters_in(fresh) == _adapters_in(shared)


# --- no import cycles ----------------------------------------------------------------------------
#
# Counted strictly: every import statement is an edge, at module level, inside functions and
# inside ``if TYPE_CHECKING:`` blocks alike (a lazy import only moves the cycle to run time, and a
# type-only one still ties the two modules together). ``from a.b import c`` is an edge to the
# package ``a.b`` (its ``__init__`` runs first) and, when ``a.b.c`` is a module, to it as well.


def _modules_under(root: Path) -> dict[str, Path]:
    """Every module (packages by their ``__init__``) in the tree at ``root``, by dotted name."""
    return {_module_name(f, root.parent): f for f in sorted(root.rglob("*.py"))}


def _lazy_references(tree: ast.AST) -> Iterator[tuple[ast.Call, str, str]]:
    """Every ``lazy("module", "attribute")`` call (how a provider spec names the code behind its
    callables, :func:`scriptorium.llm.registry.lazy`): the call, the module and the attribute.
    Its arguments must be string literals, so that the reference can be read here."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if called != "lazy":
            continue
        args = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
        module, attribute = [*args, None, None][:2]
        yield node, str(module), str(attribute)


def _import_targets(name: str, path: Path) -> Iterator[str]:
    """Every dotted name an import in the module names: the modules, and for ``from`` imports
    the module joined with each imported name (which may or may not be a module). A lazy
    reference (``lazy("a.b", "c")``) is an import of ``a.b`` too: it runs ``a.b`` on first call,
    so it ties the two modules as a function-level import would."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for _, module, attribute in _lazy_references(tree):
        yield module
        yield f"{module}.{attribute.split('.')[0]}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(node, package)
            yield base
            for alias in node.names:
                yield f"{base}.{alias.name}"


def _resolve_from(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a ``from`` import reads from (relative ones resolved)."""
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        up = parts[: len(parts) - (node.level - 1)]
        base = ".".join(up + ([base] if base else []))
    return base


def _owner(target: str, modules: Mapping[str, Path]) -> str | None:
    """The module a dotted name lives in (itself when it is one), if it is one of ``modules``."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def _import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        owners = {_owner(t, modules) for t in _import_targets(name, path)}
        graph[name] = {o for o in owners if o is not None and o != name}
    return graph


def _cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (each holds at least one
    cycle), sorted; Tarjan's algorithm without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _a_loop(component: Sequence[str], graph: Mapping[str, set[str]]) -> list[str]:
    """One shortest import loop through the component's first module, to start reading from."""
    start = component[0]
    members = set(component)
    came_from: dict[str, str] = {}
    queue = [start]
    for node in queue:
        for child in sorted(graph[node] & members):
            if child == start:
                path = [start]
                while node != start:
                    path.append(node)
                    node = came_from[node]
                return [start, *reversed(path[1:]), start]
            if child not in came_from:
                came_from[child] = node
                queue.append(child)
    return list(component)


def _describe_cycles(graph: Mapping[str, set[str]]) -> str:
    lines = []
    for component in _cycles(graph):
        lines.append("  " + " <-> ".join(component))
        lines.append("    e.g. " + " -> ".join(_a_loop(component, graph)))
    return "\n".join(lines)


def test_no_import_cycles_between_modules() -> None:
    """No module imports, however lazily, a module that imports it back (directly or around a
    longer loop). The message lists each group of modules tied in a loop, and one loop in it."""
    graph = _import_graph(_modules_under(PACKAGE))
    cycles = _cycles(graph)
    assert not cycles, f"{len(cycles)} import cycle(s):\n{_describe_cycles(graph)}"


def _sample_package(root: Path, files: Mapping[str, str]) -> dict[str, set[str]]:
    package = root / "pkg"
    package.mkdir()
    for relative, text in {"__init__.py": "", **files}.items():
        target = package / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")
    return _import_graph(_modules_under(package))


def test_the_cycle_check_flags_two_modules_importing_each_other(tmp_path: Path) -> None:
    """Not vacuous: a pair importing each other is flagged, though one import is inside a
    function and the other only for type checking; a one-way import is not."""
    graph = _sample_package(
        tmp_path,
        {
            "a.py": """
                def later():
                    from pkg.b import thing
                    return thing
                """,
            "b.py": """
                from typing import TYPE_CHECKING
                if TYPE_CHECKING:
                    from pkg import a
                thing = 1
                """,
            "c.py": "from pkg.b import thing\n",
        },
    )
    assert _cycles(graph) == [["pkg.a", "pkg.b"]]
    assert "pkg.a -> pkg.b -> pkg.a" in _describe_cycles(graph)


def test_the_cycle_check_counts_a_from_import_as_importing_the_package(tmp_path: Path) -> None:
    """``from pkg.sub import name`` runs ``pkg/sub/__init__``: when that imports the importer
    back, it is a cycle, even though the importer never names ``pkg.sub`` as a module; and a
    relative import counts like an absolute one."""
    graph = _sample_package(
        tmp_path,
        {
            "sub/__init__.py": "from pkg.sub.inner import helper\n",
            "sub/inner.py": "from ..user import used\nhelper = 1\n",
            "user.py": "from pkg.sub import helper\nused = 2\n",
        },
    )
    assert _cycles(graph) == [["pkg.sub", "pkg.sub.inner", "pkg.user"]]


def test_the_cycle_check_counts_a_lazy_reference_as_an_import(tmp_path: Path) -> None:
    """A spec's ``lazy("pkg.b", "f")`` imports ``pkg.b`` on first call: when ``pkg.b`` imports
    the spec's module back, the pair is a cycle, though neither holds an import statement of
    the other's direction."""
    graph = _sample_package(
        tmp_path,
        {
            "spec.py": 'from scriptorium.llm.registry import lazy\nSPEC = lazy("pkg.b", "f")\n',
            "b.py": "from pkg.spec import SPEC\ndef f() -> None: ...\n",
        },
    )
    assert _cycles(graph) == [["pkg.b", "pkg.spec"]]


def _lazy_calls() -> list[tuple[str, int, str, str]]:
    found = []
    for name, path in _modules_under(PACKAGE).items():
        for node, module, attribute in _lazy_references(ast.parse(path.read_text("utf-8"))):
            found.append((name, node.lineno, module, attribute))
    return found


def test_every_lazy_reference_names_something_callable() -> None:
    """Each ``lazy(...)`` in the package names, in string literals, a module that imports and an
    attribute of it that is callable: a typo or a moved function fails here, not at a user's
    first call. (Resolving imports the adapter code, never at spec import: see the light-import
    tests.)"""
    calls = _lazy_calls()
    assert len(calls) >= len(PROVIDER_MODULES)  # every built-in provider declares some
    bad = []
    for name, line, module, attribute in calls:
        where = f"{name}:{line} lazy({module!r}, {attribute!r})"
        if module == "None" or attribute == "None":
            bad.append(f"{where}: arguments must be string literals")
            continue
        try:
            target = Lazy(module, attribute).resolve()
        except Exception as err:
            bad.append(f"{where}: {type(err).__name__}: {err}")
            continue
        assert callable(target), where
    assert not bad, bad


def test_every_builtin_spec_declares_its_lazy_callables_by_literal() -> None:
    """The lazy callables of every built-in spec are among those the checks above read (declared
    with string literals in the package), so the cycle check and the resolution check see them."""
    read = {(module, attribute) for _, _, module, attribute in _lazy_calls()}
    for name in BUILTIN:
        spec = Registry(entry_points=False).get(name)
        for value in vars(spec).values():
            if isinstance(value, Lazy):
                assert (value.module, value.attribute) in read, (name, value)


# --- no private name imported from another module ------------------------------------------------
#
# A leading underscore says "only this module (or, for a module, only this package) relies on
# me". Importing such a name elsewhere is how two copies of one rule start to drift, so:
# - ``from scriptorium.x import _y`` (``_y`` not a module) is refused everywhere;
# - a private module ``scriptorium.a._m`` may be imported only by modules under ``scriptorium.a``
#   (so the top-level ``scriptorium._files``, ``_loading``, ``_journal``, ``_lazy`` and
#   ``_testing`` serve the whole package);
# - ``mod._name`` on a scriptorium module bound by an import is the same reach, spelled later.
# Tests use public names: there the ``from ... import _name`` form is refused, the testing kit's
# servers (``scriptorium._testing``) excepted.

#: Private names tests may still import, each with the reason it cannot be avoided. Empty: keep it
#: so, or say here why an entry must stay.
TEST_PRIVATE_IMPORTS_ALLOWED: frozenset[tuple[str, str]] = frozenset()
#: Private modules tests may import by the ``from`` form.
TEST_PRIVATE_MODULES_ALLOWED = ("scriptorium._testing",)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_module_problem(importer: str, module: str) -> str | None:
    """Why ``importer`` may not import ``module`` (None: it may): a private part of the dotted
    name may be used only from inside the package holding it."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        parent = ".".join(parts[:i])
        if _private(part) and not (importer == parent or importer.startswith(parent + ".")):
            return f"imports private module {module} from outside {parent or 'it'}"
    return None


def _first_party(name: str) -> bool:
    return name.split(".")[0] in ("scriptorium", "tests", "bench")


def _private_reaches(
    name: str, path: Path, modules: Mapping[str, Path], *, names_only: bool = False
) -> list[str]:
    """Every private name ``name`` (the module in ``path``) takes from another module, as
    ``"line N: what"``. ``names_only``: just the ``from ... import _name`` form (for tests)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    bound: dict[str, str] = {}  # a local name -> the scriptorium module an import bound it to

    def flag(node: ast.AST, what: str) -> None:
        found.append((getattr(node, "lineno", 0), what))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _first_party(alias.name) and not names_only:
                    problem = _private_module_problem(name, alias.name)
                    if problem:
                        flag(node, problem)
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    bound[top] = top
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(node, package)
            if not _first_party(base):
                continue
            if not names_only:
                problem = _private_module_problem(name, base)
                if problem:
                    flag(node, problem)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in modules:
                    bound[alias.asname or alias.name] = full
                if not _private(alias.name):
                    continue
                if names_only:
                    allowed = (base, alias.name) in TEST_PRIVATE_IMPORTS_ALLOWED or any(
                        full == m or full.startswith(m + ".") for m in TEST_PRIVATE_MODULES_ALLOWED
                    )
                    if not allowed:
                        flag(node, f"imports private name {alias.name} from {base}")
                elif full in modules:
                    problem = _private_module_problem(name, full)
                    if problem:
                        flag(node, problem)
                else:
                    flag(node, f"imports private name {alias.name} from {base}")
    if not names_only:
        _reaches_by_attribute(name, tree, bound, modules, flag)
    return [f"line {line}: {what}" for line, what in sorted(found)]


def _reaches_by_attribute(
    name: str,
    tree: ast.Module,
    bound: Mapping[str, str],
    modules: Mapping[str, Path],
    flag: Callable[[ast.AST, str], None],
) -> None:
    """``module._name`` where ``module`` is a scriptorium module an import bound."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        owner = _module_of(node.value, bound, modules)
        if owner is None:
            continue
        full = f"{owner}.{node.attr}"
        if full in modules:
            problem = _private_module_problem(name, full)
            if problem:
                flag(node, problem)
        else:
            flag(node, f"reaches into {owner}.{node.attr}")


def _module_of(node: ast.expr, bound: Mapping[str, str], modules: Mapping[str, Path]) -> str | None:
    """The scriptorium module an expression like ``alias`` or ``alias.sub.mod`` names, if any."""
    if isinstance(node, ast.Name):
        module = bound.get(node.id)
        return module if module in modules else None
    if isinstance(node, ast.Attribute):
        parent = _module_of(node.value, bound, modules)
        if parent is None:
            return None
        candidate = f"{parent}.{node.attr}"
        return candidate if candidate in modules else None
    return None


def _tests_modules() -> dict[str, Path]:
    tests = Path(__file__).parent
    return {_module_name(f, tests.parent): f for f in sorted(tests.rglob("*.py"))}


def test_no_module_takes_a_private_name_from_another() -> None:
    """No scriptorium module imports another's private name, a private module from outside its
    package, or reaches for ``module._name``."""
    modules = _modules_under(PACKAGE)
    found = {
        name: problems
        for name, path in modules.items()
        if (problems := _private_reaches(name, path, modules))
    }
    assert not found, "private names used across modules:\n" + "\n".join(
        f"  {name}: {problem}" for name, problems in found.items() for problem in problems
    )


def test_tests_import_only_public_names() -> None:
    """Tests go through public names (the fake servers of ``scriptorium._testing`` excepted)."""
    modules = {**_modules_under(PACKAGE), **_tests_modules()}
    found = {
        name: problems
        for name, path in _tests_modules().items()
        if (problems := _private_reaches(name, path, modules, names_only=True))
    }
    assert not found, "tests importing private names:\n" + "\n".join(
        f"  {name}: {problem}" for name, problems in found.items() for problem in problems
    )


def test_the_private_name_check_catches_every_form(tmp_path: Path) -> None:
    """Not vacuous: each form is flagged once, and what the rule allows is not."""
    package = tmp_path / "scriptorium"
    files = {
        "__init__.py": "",
        "_lazy.py": "",
        "a/__init__.py": "",
        "a/_m.py": "x = 1\n",
        "a/inside.py": "from scriptorium.a._m import x\nfrom scriptorium.a import _m\n",
        "b/__init__.py": "",
        "b/model.py": "_hidden = 1\npublic = 2\n",
        "user.py": """
            import scriptorium.a._m
            import scriptorium.b.model as model
            from scriptorium import _lazy
            from scriptorium.a._m import x
            from scriptorium.b.model import _hidden, public
            from scriptorium.b import model as again
            from .b.model import _hidden as relative

            def later():
                from scriptorium.a import _m
                return model._hidden, again.public, scriptorium.b.model._hidden, model.__name__
            """,
    }
    for relative, text in files.items():
        target = package / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")
    modules = _modules_under(package)
    assert _private_reaches("scriptorium.a.inside", modules["scriptorium.a.inside"], modules) == []
    found = _private_reaches("scriptorium.user", modules["scriptorium.user"], modules)
    assert sorted(found) == sorted(
        [
            "line 2: imports private module scriptorium.a._m from outside scriptorium.a",
            "line 5: imports private module scriptorium.a._m from outside scriptorium.a",
            "line 6: imports private name _hidden from scriptorium.b.model",
            "line 8: imports private name _hidden from scriptorium.b.model",
            "line 11: imports private module scriptorium.a._m from outside scriptorium.a",
            "line 12: reaches into scriptorium.b.model._hidden",
            "line 12: reaches into scriptorium.b.model._hidden",
        ]
    )


def test_the_tests_check_catches_a_private_import(tmp_path: Path) -> None:
    """Not vacuous: in a test, ``from ... import _name`` is flagged, whether the name is a
    function or a private module, and the testing kit's servers are not."""
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "from scriptorium.llm import _direct\n"
        "from scriptorium.usecase.unicode import _valid\n"
        "from scriptorium._testing.http import RESET\n"
        "from scriptorium import _testing\n",
        encoding="utf-8",
    )
    modules = _modules_under(PACKAGE)
    found = _private_reaches("tests.test_sample", sample, modules, names_only=True)
    assert found == [
        "line 1: imports private name _direct from scriptorium.llm",
        "line 2: imports private name _valid from scriptorium.usecase.unicode",
    ]


# --- every public package's __all__, pinned -------------------------------------------------------
#
# The public surface changes only on purpose: a name added or dropped here is a decision (and an
# entry in the changelog), never a side effect of moving code.

PUBLIC_SURFACE: dict[str, tuple[str, ...]] = {
    "scriptorium": (
        "ArtifactContent",
        "AttemptStarted",
        "Done",
        "Engine",
        "LLMRequest",
        "LLMResponse",
        "Overrides",
        "PartialValue",
        "PreparedRun",
        "ReasoningDelta",
        "RunRequest",
        "RunResult",
        "ScriptoriumError",
        "StreamEvent",
        "TextDelta",
        "Usage",
        "ValidationResult",
        "__version__",
        "errors",
    ),
    "scriptorium.errors": (
        "APIKeyEnvMissingError",
        "APIKeyRequiredError",
        "ArtifactLoadError",
        "ForeignError",
        "InvalidRequestError",
        "LLMGenerateError",
        "OutputInvalidError",
        "ProfileLoadError",
        "ProfileRequiredError",
        "PromptLoadError",
        "PromptRenderError",
        "ScriptoriumError",
        "ValidationError",
        "describe",
        "scrub_chain",
        "translate",
    ),
    "scriptorium.testing": (
        "FakeAnthropicServer",
        "FakeAzureOpenAIServer",
        "FakeBedrockServer",
        "FakeClient",
        "FakeGeminiServer",
        "FakeOpenAIServer",
        "FakeVertexServer",
        "FixedClock",
        "MemoryArtifactReader",
        "MemoryProfileRepository",
        "MemoryPromptRepository",
        "Scripted",
        "SequentialIds",
        "UnexpectedCall",
    ),
    "scriptorium.llm": (
        "AnthropicClient",
        "AsyncClient",
        "Client",
        "FakeProviderClient",
        "LLMRequest",
        "LLMResponse",
        "OpenAIClient",
        "ProviderConfig",
        "ProviderSpec",
        "Registry",
        "ReplayClient",
        "RetryHooks",
        "RetryInfo",
        "RetryPolicy",
        "Router",
        "StructuredOutput",
        "Target",
        "Usage",
        "provider_needs_key",
    ),
    "scriptorium.usecase": (
        "ArtifactRecord",
        "AsyncRunStream",
        "AttemptRecord",
        "AttemptStarted",
        "DefaultOutputRepairer",
        "Done",
        "OutputRecord",
        "OutputRepairer",
        "Overrides",
        "PartialValue",
        "PreparedRun",
        "ReasoningDelta",
        "RepairContext",
        "RepairResult",
        "RunRequest",
        "RunResult",
        "RunStream",
        "Runner",
        "StreamEvent",
        "TextDelta",
    ),
    "scriptorium.validate.schema": ("SchemaValidator",),
    "scriptorium.validate": (
        "LoadedSchema",
        "OutputContract",
        "SchemaValidator",
        "ValidationIssue",
        "ValidationResult",
        "Validator",
    ),
    "scriptorium.promptdef": (
        "ArtifactSpec",
        "FileRepository",
        "MemoryRepository",
        "OutputSpec",
        "PROMPT_ID_PATTERN",
        "PromptDefinition",
        "Repository",
        "Section",
        "is_valid_prompt_id",
    ),
    "scriptorium.profile": (
        "DEFAULT_SETTINGS",
        "ExecutionSettings",
        "FileRepository",
        "MemoryRepository",
        "PROFILE_NAME_PATTERN",
        "Pricing",
        "Profile",
        "RateLimits",
        "Repository",
        "SettingsPatch",
        "is_valid_profile_name",
        "validate_endpoint",
    ),
    "scriptorium.artifact": (
        "Artifact",
        "ArtifactContent",
        "FileReader",
        "MemoryReader",
        "Reader",
        "is_textual",
    ),
    "scriptorium.prompt": (
        "JinjaRenderer",
        "MediaPart",
        "Message",
        "RenderedPrompt",
        "Renderer",
        "TextPart",
    ),
    "scriptorium.observe": (
        "GenerationKind",
        "GenerationObservation",
        "OTelObserver",
        "Observer",
        "RunObservation",
        "observer_from_env",
    ),
    "scriptorium.batch": (
        "BatchJob",
        "BatchLimits",
        "BatchStatus",
    ),
    "scriptorium.evals": (
        "BaselineComparison",
        "CandidateReport",
        "Case",
        "CaseChange",
        "CaseComparison",
        "CaseReport",
        "DatasetSpec",
        "Expect",
        "ExpectationFailure",
        "GroupReport",
        "Interval",
        "JudgeSpec",
        "JudgeVerdict",
        "OptimizeReport",
        "OptimizeScore",
        "OutputDiff",
        "RepeatOutcome",
        "RunError",
        "TestReport",
        "TestsFile",
        "TextArtifact",
        "VersionComparison",
    ),
    "scriptorium.httpapi": ("ACCESS_LOGGER", "create_app"),
    "scriptorium.mcp": ("create_server",),
    "scriptorium.kernel": ("EXIT_COMPLETED", "EXIT_CONFIG", "EXIT_FAILED", "main", "serve"),
}


@pytest.mark.parametrize("module_name", sorted(PUBLIC_SURFACE))
def test_the_public_surface_of_each_package_is_pinned(module_name: str) -> None:
    """Each public package exports exactly the pinned names, once each, and every one resolves."""
    module = importlib.import_module(module_name)
    exported = list(module.__all__)
    assert len(exported) == len(set(exported)), f"{module_name}.__all__ repeats a name"
    pinned = set(PUBLIC_SURFACE[module_name])
    assert set(exported) == pinned, (
        f"{module_name}.__all__ changed: added {sorted(set(exported) - pinned)}, "
        f"dropped {sorted(pinned - set(exported))}"
    )
    for name in exported:
        assert hasattr(module, name), f"{module_name}.{name} does not resolve"


def test_the_llm_layer_reports_through_its_port_and_imports_no_observer() -> None:
    """The retry loop and the client cache tell the run about retries and log scope through
    ``llm.report`` (the port ``observe.scope`` fills), never by importing ``observe``."""
    bad = sorted(
        f"{path.relative_to(PACKAGE)}: {imported}"
        for path in (PACKAGE / "llm").rglob("*.py")
        for imported in _imports(path)
        if imported == "scriptorium.observe" or imported.startswith("scriptorium.observe.")
    )
    assert not bad, bad


def test_the_json_readers_import_nothing_of_the_schema_package() -> None:
    """``validate/json/`` reads text into values and knows no schema: the schema validator calls the
    readers (a schema only reaches them as a ``schema_check`` callable), never the other way."""
    bad = sorted(
        f"{path.relative_to(PACKAGE)}: {imported}"
        for path in (PACKAGE / "validate" / "json").rglob("*.py")
        for imported in _imports(path)
        if imported == "scriptorium.validate.schema"
        or imported.startswith("scriptorium.validate.schema.")
    )
    assert not bad, bad
