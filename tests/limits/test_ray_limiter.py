"""What a Ray worker asks the limiter actor: profiles without limits ask only for the grant (whose
"stop" keeps a row from being sent once the job stops); ``ready`` and ``pause`` go to the actor
only for profiles with limits. A recording stand-in for the actor handle, no cluster."""

from __future__ import annotations

from typing import Any

from scriptorium.limits.budget import Estimate
from scriptorium.limits.ray import ActorLimiter


class _Method:
    def __init__(self, name: str, calls: list[tuple[str, tuple[Any, ...]]]) -> None:
        self._name = name
        self._calls = calls

    def remote(self, *args: Any) -> None:
        self._calls.append((self._name, args))


class RecordingActor:
    """Notes every ``actor.<method>.remote(...)`` a worker would send."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> _Method:
        return _Method(name, self.calls)


NEED = Estimate(requests=1, input_tokens=10, output_tokens=10)


def test_a_profile_without_limits_asks_the_actor_nothing_before_its_grant() -> None:
    actor = RecordingActor()
    limiter = ActorLimiter(actor, frozenset({"limited"}))
    limiter.ready("free", NEED)
    limiter.pause("free", 3.0)
    limiter.settle("free", -1, NEED)
    assert actor.calls == []


def test_a_profile_with_limits_still_reports_pauses_and_settles() -> None:
    actor = RecordingActor()
    limiter = ActorLimiter(actor, frozenset({"limited"}))
    limiter.pause("limited", 3.0)
    limiter.settle("limited", 7, NEED)
    assert actor.calls == [("pause", ("limited", 3.0)), ("settle", ("limited", 7, NEED))]
