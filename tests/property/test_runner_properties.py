"""Properties of the Runner: the settings merge, and error wrapping for any collaborator failure."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scriptorium import errors
from scriptorium.profile.model import DEFAULT_SETTINGS, Profile, SettingsPatch
from scriptorium.testing import FakeClient
from scriptorium.usecase import Overrides, Runner, RunRequest
from scriptorium.usecase.prepare import merge_settings
from tests.conftest import RunnerFactory

fields = {
    "max_tokens": st.none() | st.integers(1, 5000),
    "temperature": st.none() | st.sampled_from([0.0, 0.3, 1.0, 2.0]),
    "top_p": st.none() | st.sampled_from([0.0, 0.5, 1.0]),
    "top_k": st.none() | st.integers(0, 100),
    "timeout_s": st.none() | st.sampled_from([0.5, 10.0, 60.0]),
    "max_retries": st.none() | st.integers(0, 5),
}


@settings(max_examples=60, deadline=None)
@given(profile=st.fixed_dictionaries(fields), override=st.fixed_dictionaries(fields))
def test_merge_takes_override_then_profile_then_default(
    profile: dict[str, Any], override: dict[str, Any]
) -> None:
    """Every effective value is the override if given, else the profile's, else the default, and
    settings_sources agrees."""
    prof = Profile(name="p", provider="fake", settings=SettingsPatch(**profile))
    request = RunRequest(prompt_id="x", overrides=Overrides(**override))
    effective, sources = merge_settings(prof, request)
    for name in fields:
        if override[name] is not None:
            assert getattr(effective, name) == override[name]
            assert sources[name] == "override"
        elif profile[name] is not None:
            assert getattr(effective, name) == profile[name]
            assert sources[name] == "profile"
        else:
            assert getattr(effective, name) == getattr(DEFAULT_SETTINGS, name)
            assert sources[name] == "default"


exceptions = st.sampled_from(
    [RuntimeError("x"), KeyError("k"), OSError(5, "io"), TypeError("t"), ValueError("v")]
)


class Exploding:
    """Wraps a collaborator so that one of its methods raises ``error``."""

    def __init__(self, inner: Any, method: str, error: BaseException) -> None:
        self._inner, self._method, self._error = inner, method, error

    def __getattr__(self, name: str) -> Any:
        if name == self._method:

            def boom(*args: Any, **kwargs: Any) -> Any:
                raise self._error

            return boom
        return getattr(self._inner, name)


# collaborator attribute on Runner, the method to break, and the sentinel expected.
TARGETS: list[tuple[str, str, type[errors.ScriptoriumError]]] = [
    ("_prompts", "get", errors.PromptLoadError),
    ("_profiles", "get", errors.ProfileLoadError),
    ("_artifacts", "read", errors.ArtifactLoadError),
    ("_renderer", "render", errors.PromptRenderError),
    ("_validator", "load_schema", errors.ValidationError),
    ("_validator", "validate", errors.ValidationError),
    ("_client", "generate", errors.LLMGenerateError),
]


@pytest.mark.parametrize(("attribute", "method", "sentinel"), TARGETS)
# make_runner is a factory: sharing it across examples is safe, each example builds its own Runner.
@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(error=exceptions)
def test_any_collaborator_failure_becomes_its_sentinel(
    make_runner: RunnerFactory,
    attribute: str,
    method: str,
    sentinel: type[errors.ScriptoriumError],
    error: BaseException,
) -> None:
    """Whatever a collaborator raises comes out as that step's sentinel with the cause kept."""
    runner: Runner = make_runner(FakeClient(['{"name": "A", "email": "e"}']))
    setattr(runner, attribute, Exploding(getattr(runner, attribute), method, error))
    request = RunRequest(prompt_id="extract/contact", artifacts={"document": "doc.txt"})
    with pytest.raises(sentinel) as caught:
        runner.run(request)
    assert caught.value.__cause__ is error


def test_own_errors_pass_through_collaborators_unchanged(make_runner: RunnerFactory) -> None:
    """A sentinel raised by a collaborator is not re-wrapped."""
    own = errors.ArtifactLoadError("gone", artifact="document")
    runner: Runner = make_runner(FakeClient())
    runner._artifacts = Exploding(runner._artifacts, "read", own)
    with pytest.raises(errors.ArtifactLoadError) as caught:
        runner.run(RunRequest(prompt_id="extract/contact", artifacts={"document": "doc.txt"}))
    assert caught.value is own
