"""The HTTP status of every sentinel and the error body's form, as pure functions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scriptorium import errors
from scriptorium.httpapi.errors import (
    CONFIGURATION_CODES,
    ApiError,
    error_body,
    retry_after_header,
    status_for,
)

STATUS_OF_REASON = {
    "rate_limited": 503,
    "overloaded": 503,
    "quota": 503,
    "timeout": 504,
    "config": 500,
    "provider_unavailable": 500,
}


@given(st.sampled_from(sorted(errors.LLMGenerateError.REASONS)))
def test_each_llm_reason_has_its_status(reason: str) -> None:
    """503 for busy, 504 for a spent budget, 500 for the server's set-up, 502 for the rest."""
    err = errors.LLMGenerateError("failed", reason=reason)
    assert status_for(err) == STATUS_OF_REASON.get(reason, 502)
    assert ("Retry-After" in retry_after_header(err)) == (status_for(err) == 503)


@pytest.mark.parametrize(
    ("err", "status"),
    [
        (errors.InvalidRequestError("x"), 400),
        (errors.ProfileRequiredError("x"), 400),
        (errors.ArtifactLoadError("x"), 400),
        (errors.ArtifactLoadError("x", reason="not_found"), 400),
        (errors.ArtifactLoadError("x", reason="too_large"), 413),
        (errors.PromptRenderError("x"), 422),
        (errors.OutputInvalidError("x"), 422),
        (errors.PromptLoadError("x"), 500),
        (errors.PromptLoadError("x", reason="unreadable"), 500),
        (errors.PromptLoadError("x", reason="not_found"), 404),
        (errors.ProfileLoadError("x"), 500),
        (errors.ProfileLoadError("x", reason="not_found"), 404),
        (errors.ValidationError("x"), 500),
        (errors.APIKeyEnvMissingError("x", env_var="K"), 500),
        (errors.APIKeyRequiredError("x"), 500),
    ],
)
def test_each_sentinel_has_its_status(err: errors.ScriptoriumError, status: int) -> None:
    assert status_for(err) == status


def test_every_500_sentinel_is_a_configuration_code() -> None:
    """The codes a 500 may carry are exactly those the fuzz test lets through."""
    for cls in (
        errors.PromptLoadError,
        errors.ProfileLoadError,
        errors.ValidationError,
        errors.APIKeyEnvMissingError,
        errors.APIKeyRequiredError,
    ):
        assert cls.code in CONFIGURATION_CODES


@given(st.floats(min_value=0.001, max_value=10_000, allow_nan=False))
def test_retry_after_is_whole_seconds_rounded_up(wait: float) -> None:
    err = errors.LLMGenerateError("busy", reason="rate_limited", retry_after_s=wait)
    seconds = int(retry_after_header(err)["Retry-After"])
    assert seconds >= wait
    assert seconds - wait < 1 or seconds == 1


def test_the_body_has_the_four_fields_and_the_safe_ones() -> None:
    err = errors.APIKeyEnvMissingError("set K", env_var="K", profile="p")
    body: dict[str, Any] = error_body(err, "rid-1")
    assert body == {
        "error": {
            "code": "api_key_env_missing",
            "message": "set K",
            "request_id": "rid-1",
            "retryable": False,
            "env_var": "K",
            "profile": "p",
        }
    }


def test_a_503_is_always_retryable_and_says_how_long() -> None:
    err = errors.LLMGenerateError("slow down", reason="rate_limited", retry_after_s=2.5)
    detail = error_body(err, "r")["error"]
    assert detail["retryable"] is True
    assert detail["retry_after_s"] == 2.5
    assert retry_after_header(err) == {"Retry-After": "3"}


def test_an_absolute_path_is_not_shown() -> None:
    err = errors.ProfileLoadError("broken", profile="p", path="/srv/project/profiles/p.yaml")
    assert "path" not in error_body(err, "r")["error"]
    relative = errors.ValidationError("bad schema", path="x.schema.json")
    assert error_body(relative, "r")["error"]["path"] == "x.schema.json"


@given(st.text(min_size=8, max_size=40).filter(lambda s: s not in "bad value [redacted] here"))
def test_given_secrets_are_scrubbed_from_the_message(secret: str) -> None:
    err = errors.InvalidRequestError(f"bad value {secret} here")
    assert secret not in error_body(err, "r", secrets=[secret])["error"]["message"]


def test_http_layer_errors_render_like_sentinels() -> None:
    err = ApiError(413, "payload_too_large", "too big", retryable=False)
    assert error_body(err, "r") == {
        "error": {
            "code": "payload_too_large",
            "message": "too big",
            "request_id": "r",
            "retryable": False,
        }
    }


def test_the_servers_directories_are_shown_as_dot() -> None:
    err = errors.PromptLoadError("prompt 'x': not found in /srv/project/prompts")
    message = error_body(err, "r", roots=["/srv/project", "/srv"])["error"]["message"]
    assert message == "prompt 'x': not found in ./prompts"
