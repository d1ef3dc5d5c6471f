"""Properties of the Runner: the settings merge, and error wrapping for any collaborator failure."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium import errors
from scriptorium.profile.model import DEFAULT_SETTINGS, Profile, SettingsPatch
from scriptorium.prompt.jinja import JinjaRenderer
from scriptorium.testing import (
    FakeClient,
    FixedClock,
    MemoryArtifactReader,
    MemoryProfileRepository,
    MemoryPromptRepository,
    SequentialIds,
)
from scriptorium.usecase import Overrides, Runner, RunRequest
from scriptorium.usecase.prepare import merge_settings
from scriptorium.validate.schema import SchemaValidator
from tests.conftest import FILES, PROFILES, PROMPTS

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


# collaborator (the Runner's keyword), the method to break, and the sentinel expected.
TARGETS: list[tuple[str, str, type[errors.ScriptoriumError]]] = [
    ("prompts", "get", errors.PromptLoadError),
    ("profiles", "get", errors.ProfileLoadError),
    ("artifacts", "read", errors.ArtifactLoadError),
    ("renderer", "render", errors.PromptRenderError),
    ("validator", "load_schema", errors.ValidationError),
    ("validator", "validate", errors.ValidationError),
    ("client", "generate", errors.LLMGenerateError),
]


def _runner(client: FakeClient, attribute: str, method: str, error: BaseException) -> Runner:
    """A Runner over the in-memory example project whose ``attribute`` collaborator raises
    ``error`` from ``method``."""
    collaborators: dict[str, Any] = {
        "prompts": MemoryPromptRepository(dict(PROMPTS)),
        "profiles": MemoryProfileRepository(dict(PROFILES)),
        "artifacts": MemoryArtifactReader(dict(FILES)),
        "renderer": JinjaRenderer(),
        "client": client,
        "validator": SchemaValidator(),
    }
    collaborators[attribute] = Exploding(collaborators[attribute], method, error)
    return Runner(**collaborators, env={}, clock=FixedClock(), new_id=SequentialIds())


@pytest.mark.parametrize(("attribute", "method", "sentinel"), TARGETS)
@settings(max_examples=10, deadline=None)
@given(error=exceptions)
def test_any_collaborator_failure_becomes_its_sentinel(
    attribute: str,
    method: str,
    sentinel: type[errors.ScriptoriumError],
    error: BaseException,
) -> None:
    """Whatever a collaborator raises comes out as that step's sentinel with the cause kept."""
    client = FakeClient(['{"name": "A", "email": "e"}'])
    runner = _runner(client, attribute, method, error)
    request = RunRequest(prompt_id="extract/contact", artifacts={"document": "doc.txt"})
    with pytest.raises(sentinel) as caught:
        runner.run(request)
    assert caught.value.__cause__ is error


def test_own_errors_pass_through_collaborators_unchanged() -> None:
    """A sentinel raised by a collaborator is not re-wrapped."""
    own = errors.ArtifactLoadError("gone", artifact="document")
    runner = _runner(FakeClient(), "artifacts", "read", own)
    with pytest.raises(errors.ArtifactLoadError) as caught:
        runner.run(RunRequest(prompt_id="extract/contact", artifacts={"document": "doc.txt"}))
    assert caught.value is own
