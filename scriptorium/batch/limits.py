"""Moved to :mod:`scriptorium.limits` (the budget in ``limits.budget``, estimates in
``limits.estimates``, the limiter port in ``limits.limiter``, the local holder in ``limits.local``,
the row gate and retry hooks in ``limits.hooks``). This module only re-exports those names, for
one release."""

from __future__ import annotations

from scriptorium.limits.budget import DEFAULT_WINDOW_S, Estimate, RateBudget, default_margin_s
from scriptorium.limits.estimates import estimate, real_usage
from scriptorium.limits.hooks import Gate, guarded, rate_limit_hooks
from scriptorium.limits.limiter import Limiter, Stopped
from scriptorium.limits.local import LocalLimiter

__all__ = [
    "DEFAULT_WINDOW_S",
    "Estimate",
    "Gate",
    "Limiter",
    "LocalLimiter",
    "RateBudget",
    "Stopped",
    "default_margin_s",
    "estimate",
    "guarded",
    "rate_limit_hooks",
    "real_usage",
]
