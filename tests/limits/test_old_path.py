"""``scriptorium.batch.limits`` (where the budgets lived) still hands out the same objects, and
``scriptorium.limits`` names them all without loading a module until one is asked for."""

from __future__ import annotations

import importlib

import scriptorium.batch.limits as old
import scriptorium.limits as limits


def test_the_old_module_re_exports_the_same_objects() -> None:
    for name in old.__all__:
        if name == "default_margin_s":
            from scriptorium.limits.budget import default_margin_s

            assert old.default_margin_s is default_margin_s
            continue
        assert getattr(old, name) is getattr(limits, name), name


def test_every_name_of_the_package_resolves() -> None:
    module = importlib.import_module("scriptorium.limits")
    for name in module.__all__:
        assert getattr(module, name) is not None, name
