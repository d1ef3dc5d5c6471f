"""Moved to :mod:`scriptorium.llm.anthropic.cache` (the Anthropic package holds its cache
minimums; ``ProviderSpec.minimum_cacheable_tokens`` asks any provider); kept as a re-export for one
release."""

from scriptorium.llm.anthropic.cache import CACHE_MINIMUMS_DATE, minimum_cacheable_tokens

__all__ = ["CACHE_MINIMUMS_DATE", "minimum_cacheable_tokens"]
