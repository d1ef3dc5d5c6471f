"""``reason`` on prompt and profile load errors: ``not_found``, ``invalid`` or ``unreadable``, the
same from the file and the memory repositories, and messages that name the directory searched."""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

import pytest

from scriptorium import Engine, errors
from scriptorium.profile.files import FileRepository as ProfileFiles
from scriptorium.prompt.jinja import JinjaRenderer
from scriptorium.promptdef.files import FileRepository as PromptFiles
from scriptorium.promptdef.model import PromptDefinition
from scriptorium.promptdef.repository import Repository as PromptRepository
from scriptorium.testing import (
    FakeClient,
    MemoryArtifactReader,
    MemoryProfileRepository,
    MemoryPromptRepository,
)
from scriptorium.usecase import Runner, RunRequest
from scriptorium.validate.schema import SchemaValidator

GOOD_PROMPT = "---\nprofile: offline\n---\nHello.\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "ok.prompt.md").write_text(GOOD_PROMPT, encoding="utf-8")
    (tmp_path / "prompts" / "broken.prompt.md").write_text(
        "---\nprofile: [\n---\nHi\n", encoding="utf-8"
    )
    (tmp_path / "prompts" / "badsyntax.prompt.md").write_text(
        "---\nprofile: offline\n---\nHi {% if %}\n", encoding="utf-8"
    )
    (tmp_path / "prompts" / "nofile.prompt.md").mkdir()
    (tmp_path / "profiles" / "offline.yaml").write_text("provider: fake\n", encoding="utf-8")
    (tmp_path / "profiles" / "bad.yaml").write_text("provider: [\n", encoding="utf-8")
    return tmp_path


def test_a_missing_prompt_is_not_found_and_names_the_directory(project: Path) -> None:
    with pytest.raises(errors.PromptLoadError) as caught:
        PromptFiles(project / "prompts").get("nope")
    assert caught.value.reason == "not_found"
    assert str(project / "prompts") in caught.value.message


def test_a_broken_prompt_is_invalid_and_a_directory_in_its_place_unreadable(
    project: Path,
) -> None:
    repo = PromptFiles(project / "prompts")
    with pytest.raises(errors.PromptLoadError) as broken:
        repo.get("broken")
    assert broken.value.reason == "invalid"
    with pytest.raises(errors.PromptLoadError) as folder:
        repo.get("nofile")
    assert folder.value.reason == "unreadable"


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root reads anything")
def test_a_prompt_without_read_permission_is_unreadable(project: Path) -> None:
    path = project / "prompts" / "ok.prompt.md"
    path.chmod(0)
    try:
        with pytest.raises(errors.PromptLoadError) as caught:
            PromptFiles(project / "prompts").get("ok")
    finally:
        path.chmod(0o644)
    assert caught.value.reason == "unreadable"


def test_a_template_syntax_error_is_a_prompt_load_error_through_the_engine(project: Path) -> None:
    """A broken template is a load failure (the file is wrong), not a render failure."""
    client = FakeClient()
    engine = Engine(project, client=client)
    with pytest.raises(errors.PromptLoadError) as caught:
        engine.prepare("badsyntax")
    assert caught.value.reason == "invalid"
    assert caught.value.prompt_id == "badsyntax"


def test_profile_reasons_and_the_directory_searched(project: Path) -> None:
    repo = ProfileFiles(project / "profiles")
    with pytest.raises(errors.ProfileLoadError) as missing:
        repo.get("nope")
    assert missing.value.reason == "not_found"
    assert str(project / "profiles") in missing.value.message
    with pytest.raises(errors.ProfileLoadError) as bad:
        repo.get("bad")
    assert bad.value.reason == "invalid"


def test_a_missing_profiles_directory_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(errors.ProfileLoadError) as caught:
        ProfileFiles(tmp_path / "profiles").get("offline")
    assert caught.value.reason == "not_found"


def test_memory_repositories_give_the_same_reasons() -> None:
    prompts = MemoryPromptRepository({"broken": "---\nprofile: [\n---\nHi\n"})
    profiles = MemoryProfileRepository({"bad": "provider: [\n"})
    for call, reason in (
        (lambda: prompts.get("nope"), "not_found"),
        (lambda: prompts.get("broken"), "invalid"),
        (lambda: profiles.get("nope"), "not_found"),
        (lambda: profiles.get("bad"), "invalid"),
    ):
        with pytest.raises((errors.PromptLoadError, errors.ProfileLoadError)) as caught:
            call()
        assert caught.value.reason == reason


def test_the_reason_survives_pickling_and_the_wire_form() -> None:
    err = errors.ProfileLoadError("profile 'x': not found", profile="x", reason="not_found")
    copy = pickle.loads(pickle.dumps(err))
    assert isinstance(copy, errors.ProfileLoadError)
    assert copy.reason == "not_found"
    assert err.to_dict()["reason"] == "not_found"


def test_an_unknown_reason_is_a_programming_error() -> None:
    with pytest.raises(TypeError):
        errors.PromptLoadError("x", reason="gone")


class _MissingEverything:
    """A user's prompt repository that knows no prompt (raises KeyError)."""

    def get(self, prompt_id: str) -> PromptDefinition:
        raise KeyError(prompt_id)

    def list(self) -> list[str]:
        return []


class _Denied(_MissingEverything):
    """A user's prompt repository whose storage refuses access."""

    def get(self, prompt_id: str) -> PromptDefinition:
        raise PermissionError("denied")


@pytest.mark.parametrize(
    ("repository", "reason"), [(_MissingEverything(), "not_found"), (_Denied(), "unreadable")]
)
def test_a_custom_repository_failure_gets_a_reason_from_its_cause(
    repository: PromptRepository, reason: str
) -> None:
    """A foreign exception from a user's repository is translated with a fitting reason."""
    runner = Runner(
        prompts=repository,
        profiles=MemoryProfileRepository(),
        artifacts=MemoryArtifactReader(),
        renderer=JinjaRenderer(),
        client=FakeClient(),
        validator=SchemaValidator(),
    )
    with pytest.raises(errors.PromptLoadError) as caught:
        runner.prepare(RunRequest(prompt_id="any"))
    assert caught.value.reason == reason
    assert caught.value.__cause__ is not None
