"""Rate budgets shared by every worker of a batch: the profile's ``limits``, enforced the same way
whoever runs the rows.

- :mod:`~scriptorium.limits.budget`: :class:`RateBudget`, the pure sliding-window budget, and
  :class:`Estimate`;
- :mod:`~scriptorium.limits.estimates`: what a row is expected to use, and what it used;
- :mod:`~scriptorium.limits.limiter`: the :class:`Limiter` port a worker asks, and :class:`Stopped`;
- :mod:`~scriptorium.limits.local`: :class:`LocalLimiter`, the budgets of threads in one process;
- :mod:`~scriptorium.limits.ray`: :class:`LimiterActor` and :class:`ActorLimiter`, the budgets
  of Ray workers (``ray`` imported only when an actor is asked);
- :mod:`~scriptorium.limits.hooks`: the row gate (:func:`guarded`), the retry hooks that take
  each request's grant (:func:`rate_limit_hooks`) and the cooldowns a run sees
  (:class:`RowCooldowns`: the engine's, and the job's during a batch row);
- :mod:`~scriptorium.limits.cooldown`: the :class:`Cooldowns` port of fallback chains, its pure
  :class:`CooldownTable` and :class:`LocalCooldowns`.

Names are loaded on first use: importing this package loads none of its modules.
"""

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr

if TYPE_CHECKING:
    from scriptorium.limits.budget import DEFAULT_WINDOW_S, Estimate, RateBudget
    from scriptorium.limits.cooldown import Cooldowns, CooldownTable, LocalCooldowns
    from scriptorium.limits.estimates import estimate, real_usage
    from scriptorium.limits.hooks import Gate, RowCooldowns, guarded, rate_limit_hooks
    from scriptorium.limits.limiter import Limiter, Stopped
    from scriptorium.limits.local import LocalLimiter
    from scriptorium.limits.ray import ActorLimiter, LimiterActor

__all__ = [
    "DEFAULT_WINDOW_S",
    "ActorLimiter",
    "CooldownTable",
    "Cooldowns",
    "Estimate",
    "Gate",
    "Limiter",
    "LimiterActor",
    "LocalCooldowns",
    "LocalLimiter",
    "RateBudget",
    "RowCooldowns",
    "Stopped",
    "estimate",
    "guarded",
    "rate_limit_hooks",
    "real_usage",
]

__getattr__ = lazy_getattr(
    __name__,
    {
        "DEFAULT_WINDOW_S": "budget",
        "Estimate": "budget",
        "RateBudget": "budget",
        "estimate": "estimates",
        "real_usage": "estimates",
        "CooldownTable": "cooldown",
        "Cooldowns": "cooldown",
        "LocalCooldowns": "cooldown",
        "Gate": "hooks",
        "RowCooldowns": "hooks",
        "guarded": "hooks",
        "rate_limit_hooks": "hooks",
        "Limiter": "limiter",
        "Stopped": "limiter",
        "LocalLimiter": "local",
        "ActorLimiter": "ray",
        "LimiterActor": "ray",
    },
)
