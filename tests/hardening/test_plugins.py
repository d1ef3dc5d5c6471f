"""A provider plugin that misbehaves at import (exits, raises ``KeyboardInterrupt`` or any
``BaseException``, never returns) or shares its name with another breaks no project that does not
use it: plugins are found by name without being imported, each import runs apart and bounded, and
``check`` names every broken or clashing one."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from scriptorium.errors import LLMGenerateError
from scriptorium.kernel.providers import choose_provider
from scriptorium.llm.registry import Registry
from tests.llm.test_registry import TOY_PACKAGE, cli, install, project

MISBEHAVING = {
    "quitter": "import sys\nsys.exit(3)\n",
    "interrupter": "raise KeyboardInterrupt\n",
    "escaper": "class Odd(BaseException):\n    pass\n\nraise Odd('out of the blue')\n",
    "sleeper": "import time\ntime.sleep(20)\n",
}


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    for name, source in MISBEHAVING.items():
        install(site, f"{name}_dist", {name: f"{name}_provider:SPEC"}, {f"{name}_provider": source})
    # Two distributions declaring the same provider name.
    install(site, "twin_a", {"twin": "twin_a_provider:spec"}, {"twin_a_provider": TOY_PACKAGE})
    install(site, "twin_b", {"twin": "twin_b_provider:spec"}, {"twin_b_provider": TOY_PACKAGE})
    # A good one whose entry point is named after its provider.
    install(site, "toy_dist", {"toy": "toy_provider:spec"}, {"toy_provider": TOY_PACKAGE})
    return site


def test_names_and_unknown_providers_import_no_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(_site(tmp_path)))
    registry = Registry(plugin_timeout_s=10.0)  # an import would be waited for that long
    started = time.monotonic()
    names = registry.names()
    assert {"toy", "quitter", "sleeper"} <= set(names)
    assert "twin" not in names  # a clash is no provider
    with pytest.raises(LLMGenerateError, match="unknown provider 'nosuch'"):
        registry.get("nosuch")
    assert time.monotonic() - started < 5
    assert registry.get("toy").name == "toy"


@pytest.mark.parametrize("name", sorted(MISBEHAVING))
def test_a_plugin_that_misbehaves_at_import_is_a_problem_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.syspath_prepend(str(_site(tmp_path)))
    registry = Registry(plugin_timeout_s=0.3)
    assert registry.find(name) is None
    with pytest.raises(LLMGenerateError, match=f"provider '{name}' cannot be used") as caught:
        registry.get(name)
    assert caught.value.reason == "config"
    assert any(f"entry point {name!r}" in p for p in registry.problems)
    assert name not in registry.names()
    assert registry.get("fake").name == "fake"


def test_every_problem_is_listed_within_one_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(_site(tmp_path)))
    registry = Registry(plugin_timeout_s=0.5)
    started = time.monotonic()
    problems = registry.problems
    assert time.monotonic() - started < 3
    for name in [*MISBEHAVING, "twin"]:
        assert sum(f"entry point {name!r}" in p for p in problems) == 1, problems
    clash = next(p for p in problems if "'twin'" in p)
    assert "twin_a_provider:spec" in clash
    assert "twin_b_provider:spec" in clash
    assert registry.find("toy") is not None


def test_the_kernel_choosing_an_unknown_provider_is_not_held_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(_site(tmp_path)))
    registry = Registry(plugin_timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(LLMGenerateError):
        choose_provider({"CC_LLM_PROVIDER": "nosuch"}, prompt_run=False, registry=registry)
    assert time.monotonic() - started < 3


@pytest.mark.slow
def test_check_run_and_unknown_providers_from_the_cli(tmp_path: Path) -> None:
    site = _site(tmp_path)
    root = project(tmp_path / "project", "fake", "{responses: [Hello Ada]}")
    done = cli(root, site, "run", "hello", "-i", "name=Ada")
    assert (done.returncode, done.stdout) == (0, "Hello Ada\n"), done.stderr
    checked = cli(root, site, "check")
    assert checked.returncode in (0, 1), checked.stderr
    shown = checked.stdout + checked.stderr
    for name in [*MISBEHAVING, "twin"]:
        assert f"entry point {name!r}" in shown, shown
    assert "interrupted" not in shown
    (root / "profiles" / "main.yaml").write_text("provider: nosuch\nmodel: m\n")
    unknown = cli(root, site, "run", "hello", "-i", "name=Ada")
    assert unknown.returncode == 4
    assert "unknown provider 'nosuch'" in unknown.stderr
