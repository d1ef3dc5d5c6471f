"""Moved to :mod:`scriptorium.check` (``Problem``, ``KINDS`` and ``WARNINGS`` in
``check.problems``, ``check_project`` in ``check.project``). This module only re-exports those
names, for one release; ``check_project`` still takes an ``Engine``."""

from __future__ import annotations

from scriptorium.check.problems import KINDS, WARNINGS, Problem
from scriptorium.check.project import check_project

__all__ = ["KINDS", "WARNINGS", "Problem", "check_project"]
