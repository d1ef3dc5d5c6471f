"""``scriptorium test --record`` and ``--replay``: the profiles of a test run, with every cassette
profile switched to one mode.

A cassette profile is one whose ``options`` name a ``cassette`` (the ``replay`` provider's). With
``record``, its recorded provider answers live and every answer is appended to the cassette; with
``replay``, answers come from the cassette only, and its ``api_key_env`` is dropped for the run
(nothing is sent, so no key is needed). A profile without a cassette runs as it is when it is
offline (its provider needs no key, such as ``fake``) and is refused when it would run live: a
recorded suite must not make calls it does not record, and a replayed one must make none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from scriptorium.errors import InvalidRequestError
from scriptorium.profile.model import Profile
from scriptorium.profile.repository import Repository

__all__ = ["CassetteMode", "CassetteProfiles"]

CassetteMode = Literal["record", "replay"]


class CassetteProfiles:
    """A profile repository over ``inner`` applying ``mode`` to cassette profiles (see the
    module docstring). ``calls_out(provider)`` says whether a provider's profiles call a model
    over the network (a cloud platform's too, where no key is read)."""

    def __init__(
        self, inner: Repository, mode: CassetteMode, *, calls_out: Callable[[str], bool]
    ) -> None:
        if mode not in ("record", "replay"):
            raise InvalidRequestError("cassette mode must be record or replay", field="cassettes")
        self._inner = inner
        self._mode = mode
        self._calls_out = calls_out

    def get(self, name: str) -> Profile:
        """The profile ``name`` in this run's mode; ``InvalidRequestError`` for a live profile
        without a cassette."""
        profile = self._inner.get(name)
        if "cassette" in profile.options:
            update: dict[str, object] = {"options": {**profile.options, "mode": self._mode}}
            if self._mode == "replay":
                update["api_key_env"] = None
            return profile.model_copy(update=update)
        if self._calls_out(profile.provider):
            flag = f"--{self._mode}"
            raise InvalidRequestError(
                f"{flag}: profile {name!r} ({profile.provider}) has no cassette, so it would run "
                f"live {'without recording' if self._mode == 'record' else 'during a replay'}; "
                "use a replay profile (options: {cassette: ..., record_provider: ...}) or an "
                "offline one",
                profile=name,
                field="cassettes",
            )
        return profile

    def list(self) -> list[str]:
        """The profile names of ``inner``."""
        return self._inner.list()
