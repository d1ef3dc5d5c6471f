"""The sentinel tree: codes, fields, pickling, and the one translation helper."""

from __future__ import annotations

import pickle

import pytest

from scriptorium import errors

TABLE = {
    errors.InvalidRequestError: "invalid_request",
    errors.ProfileRequiredError: "profile_required",
    errors.APIKeyEnvMissingError: "api_key_env_missing",
    errors.APIKeyRequiredError: "api_key_required",
    errors.PromptLoadError: "prompt_load",
    errors.ProfileLoadError: "profile_load",
    errors.ArtifactLoadError: "artifact_load",
    errors.PromptRenderError: "prompt_render",
    errors.LLMGenerateError: "llm_generate",
    errors.ValidationError: "validation",
    errors.OutputInvalidError: "output_invalid",
}


@pytest.mark.parametrize(("cls", "code"), TABLE.items())
def test_every_sentinel_has_its_code_and_a_docstring(
    cls: type[errors.ScriptoriumError], code: str
) -> None:
    """Each class of the table is a ScriptoriumError with its stable code and says when it's raised."""
    assert issubclass(cls, errors.ScriptoriumError)
    assert cls.code == code
    assert cls.__doc__
    assert "raised" in cls.__doc__.lower()


def test_invalid_request_is_also_a_value_error() -> None:
    """InvalidRequestError can be caught as ValueError."""
    assert issubclass(errors.InvalidRequestError, ValueError)


def test_llm_error_carries_its_fields_through_pickle() -> None:
    """LLMGenerateError keeps reason, retryable and the rest across pickling."""
    err = errors.LLMGenerateError(
        "slow down",
        reason="rate_limited",
        retryable=True,
        http_status=429,
        retry_after_s=2.0,
        attempts=3,
        elapsed_s=4.5,
        provider="anthropic",
        model="m",
    )
    back = pickle.loads(pickle.dumps(err))
    assert isinstance(back, errors.LLMGenerateError)
    assert (back.reason, back.retryable, back.http_status, back.attempts) == (
        "rate_limited",
        True,
        429,
        3,
    )
    assert back.to_dict()["code"] == "llm_generate"


def test_unknown_reason_is_a_programming_error() -> None:
    """Reasons are a closed set."""
    with pytest.raises(TypeError):
        errors.LLMGenerateError("x", reason="weird")


def test_translate_keeps_the_cause_and_scrubs_secrets() -> None:
    """A foreign exception becomes the sentinel; a cause holding the secret is replaced by a
    scrubbed stand-in naming its class, and the secret is removed from the message."""
    cause = RuntimeError("token s3cr3t-value rejected")
    with (
        pytest.raises(errors.PromptLoadError) as caught,
        errors.translate(
            errors.PromptLoadError, "loading", secrets=["s3cr3t-value"], prompt_id="p"
        ),
    ):
        raise cause
    stand_in = caught.value.__cause__
    assert isinstance(stand_in, errors.ForeignError)
    assert stand_in.original_type == "RuntimeError"
    assert "s3cr3t-value" not in str(stand_in)
    assert "rejected" in str(stand_in)
    assert "s3cr3t-value" not in str(caught.value)
    assert caught.value.prompt_id == "p"


def test_translate_keeps_a_cause_that_holds_no_secret() -> None:
    """A cause without the secret stays the very exception that was raised."""
    cause = RuntimeError("connection reset")
    with (
        pytest.raises(errors.PromptLoadError) as caught,
        errors.translate(errors.PromptLoadError, "loading", secrets=["s3cr3t-value"]),
    ):
        raise cause
    assert caught.value.__cause__ is cause


def test_translate_lets_own_errors_through() -> None:
    """Our own errors are not re-wrapped."""
    own = errors.ArtifactLoadError("gone")
    with (
        pytest.raises(errors.ArtifactLoadError) as caught,
        errors.translate(errors.PromptLoadError, "loading"),
    ):
        raise own
    assert caught.value is own


def test_translate_never_catches_interrupts() -> None:
    """KeyboardInterrupt is not an error to translate."""
    with pytest.raises(KeyboardInterrupt), errors.translate(errors.PromptLoadError, "loading"):
        raise KeyboardInterrupt
