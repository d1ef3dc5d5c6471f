"""``scriptorium.lint`` and ``scriptorium.lint_cache`` (where ``check`` lived) still hand out the
same objects; ``lint.check_project`` still takes an engine."""

from __future__ import annotations

from pathlib import Path

import scriptorium.check as check
import scriptorium.lint as lint
import scriptorium.lint_cache as lint_cache
from scriptorium import Engine
from scriptorium.check.cache import cache_problems


def test_the_old_modules_re_export_the_same_objects() -> None:
    for name in lint.__all__:
        assert getattr(lint, name) is getattr(check, name), name
    assert lint_cache.cache_problems is cache_problems


def test_the_old_check_project_takes_an_engine(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    assert lint.check_project(Engine(tmp_path)) == []


def test_every_name_of_the_package_resolves() -> None:
    for name in check.__all__:
        assert getattr(check, name) is not None, name
