"""The optional ``limits`` profile key: parsed, validated, and in ``profile_hash`` only when given."""

from __future__ import annotations

import pytest

from scriptorium.errors import ProfileLoadError
from scriptorium.hashing import hash_json
from scriptorium.profile.parse import parse_profile


def test_limits_are_parsed_and_each_budget_is_optional() -> None:
    profile = parse_profile(
        "provider: anthropic\nmodel: m\nlimits: {requests_per_minute: 50, output_tokens_per_minute: 8000}\n",
        name="p",
    )
    assert profile.limits is not None
    assert profile.limits.given() == {"requests_per_minute": 50, "output_tokens_per_minute": 8000}


@pytest.mark.parametrize(
    "limits", ["{requests_per_minute: 0}", "{tokens_per_minute: 5}", "{requests_per_minute: x}"]
)
def test_bad_limits_are_a_profile_load_error(limits: str) -> None:
    with pytest.raises(ProfileLoadError):
        parse_profile(f"provider: anthropic\nmodel: m\nlimits: {limits}\n", name="p")


def test_a_profile_without_limits_keeps_its_hash_and_limits_change_it() -> None:
    plain = parse_profile("provider: anthropic\nmodel: m\n", name="p")
    assert "limits" not in plain.hash_form()
    limited = parse_profile(
        "provider: anthropic\nmodel: m\nlimits: {requests_per_minute: 50}\n", name="p"
    )
    assert limited.hash_form()["limits"] == {"requests_per_minute": 50}
    assert hash_json(limited.hash_form()) != hash_json(plain.hash_form())
