"""The ``fallback`` and ``fallback_on`` profile keys, and the chain a profile's fallbacks make."""

from __future__ import annotations

from typing import Any

import pytest

from scriptorium.errors import LLMGenerateError, ProfileLoadError
from scriptorium.hashing import hash_json
from scriptorium.profile.chain import fallback_chain
from scriptorium.profile.memory import MemoryRepository
from scriptorium.profile.model import DEFAULT_FALLBACK_ON, FALLBACK_REASONS, NEVER_FALL_BACK_ON
from scriptorium.profile.parse import parse_profile_data


def _profile(**data: Any) -> Any:
    return parse_profile_data({"provider": "fake", **data}, name="p")


def test_a_profile_without_the_keys_falls_back_nowhere_on_the_default_reasons() -> None:
    profile = _profile()
    assert profile.fallback == ()
    assert profile.fallback_on is None
    assert profile.fallback_reasons == frozenset(DEFAULT_FALLBACK_ON)
    assert set(DEFAULT_FALLBACK_ON) == {
        "rate_limited",
        "overloaded",
        "server_error",
        "connection",
        "timeout",
        "quota",
    }


def test_the_keys_are_read_in_order() -> None:
    profile = _profile(fallback=["b", "c"], fallback_on=["overloaded", "invalid_output"])
    assert profile.fallback == ("b", "c")
    assert profile.fallback_reasons == {"overloaded", "invalid_output"}


@pytest.mark.parametrize("reason", sorted(NEVER_FALL_BACK_ON))
def test_auth_permission_and_invalid_request_are_refused_with_the_reason(reason: str) -> None:
    """They would fail the same way on another profile, or hide a mistake."""
    with pytest.raises(ProfileLoadError, match=f"'{reason}' never falls back"):
        _profile(fallback=["b"], fallback_on=[reason])


@pytest.mark.parametrize(
    "reason", sorted(LLMGenerateError.REASONS - FALLBACK_REASONS - set(NEVER_FALL_BACK_ON))
)
def test_other_reasons_that_are_no_fallback_reason_are_refused(reason: str) -> None:
    """cancelled, config, provider_unavailable, replay_miss: a mistake or a choice to stop."""
    with pytest.raises(ProfileLoadError, match="unknown reason"):
        _profile(fallback_on=[reason])


def test_the_listable_reasons() -> None:
    assert {
        *DEFAULT_FALLBACK_ON,
        "context_window",
        "invalid_output",
        "invalid_response",
        "not_found",
    } == FALLBACK_REASONS


@pytest.mark.parametrize(
    ("fallback", "message"),
    [
        (["b", "b"], "names 'b' twice"),
        (["Not A Name"], "is not a profile name"),
        ("b", "tuple"),
    ],
)
def test_malformed_fallback_lists_are_refused(fallback: Any, message: str) -> None:
    with pytest.raises(ProfileLoadError, match=message):
        _profile(fallback=fallback)


def test_the_profile_hash_form_is_unchanged_without_the_keys_and_covers_them_when_set() -> None:
    """Profiles written before the keys existed keep their hash."""
    plain = _profile(model="m")
    assert "fallback" not in plain.hash_form()
    assert "fallback_on" not in plain.hash_form()
    chained = _profile(model="m", fallback=["b"])
    other = _profile(model="m", fallback=["b"], fallback_on=["overloaded"])
    assert len({hash_json(p.hash_form()) for p in (plain, chained, other)}) == 3


def _repository(profiles: dict[str, list[str]]) -> MemoryRepository:
    return MemoryRepository(
        {name: {"provider": "fake", "fallback": chain} for name, chain in profiles.items()}
    )


def _chain(profiles: dict[str, list[str]], first: str) -> list[str]:
    repository = _repository(profiles)
    return [p.name for p in fallback_chain(repository.get(first), repository.get)]


def test_each_fallback_is_followed_by_its_own_chain_depth_first() -> None:
    profiles = {"a": ["b", "c"], "b": ["d"], "c": [], "d": ["e"], "e": []}
    assert _chain(profiles, "a") == ["b", "d", "e", "c"]
    assert _chain(profiles, "b") == ["d", "e"]
    assert _chain(profiles, "c") == []


def test_a_profile_reached_twice_is_tried_once_where_it_is_reached_first() -> None:
    profiles = {"a": ["b", "c"], "b": ["c"], "c": []}
    assert _chain(profiles, "a") == ["b", "c"]


@pytest.mark.parametrize(
    ("profiles", "loop"),
    [
        ({"a": ["a"]}, "a -> a"),
        ({"a": ["b"], "b": ["a"]}, "a -> b -> a"),
        ({"a": ["b"], "b": ["c"], "c": ["b"]}, "a -> b -> c -> b"),
    ],
)
def test_a_chain_that_loops_does_not_load(profiles: dict[str, list[str]], loop: str) -> None:
    with pytest.raises(ProfileLoadError, match=f"loops \\({loop}\\)") as caught:
        _chain(profiles, "a")
    assert (caught.value.profile, caught.value.reason) == ("a", "invalid")


def test_a_chain_naming_a_profile_that_does_not_exist_does_not_load() -> None:
    with pytest.raises(ProfileLoadError, match="fallback 'gone' does not load") as caught:
        _chain({"a": ["b"], "b": ["gone"]}, "a")
    assert (caught.value.profile, caught.value.reason) == ("a", "not_found")


def test_a_chain_naming_a_broken_profile_does_not_load() -> None:
    repository = MemoryRepository(
        {"a": {"provider": "fake", "fallback": ["b"]}, "b": {"provider": "fake", "oops": 1}}
    )
    with pytest.raises(ProfileLoadError, match="fallback 'b' does not load") as caught:
        fallback_chain(repository.get("a"), repository.get)
    assert caught.value.reason == "invalid"
