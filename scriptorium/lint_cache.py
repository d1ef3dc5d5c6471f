"""Moved to :mod:`scriptorium.check.cache`. This module only re-exports ``cache_problems``, for
one release."""

from __future__ import annotations

from scriptorium.check.cache import cache_problems

__all__ = ["cache_problems"]
