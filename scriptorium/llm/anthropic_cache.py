"""Moved to :mod:`scriptorium.llm.anthropic.cache`; kept as a re-export for one release."""

from scriptorium.llm.anthropic.cache import apply_cache, cache_control, one_hour_writes

__all__ = ["apply_cache", "cache_control", "one_hour_writes"]
