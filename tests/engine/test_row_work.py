"""What the engine hands a batch executor (``Engine.row_work()``): the run path itself, the
profiles' limits, and a recipe from which another process builds the same engine; an engine that
cannot travel refuses to give one."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from scriptorium import Engine, RunRequest
from scriptorium.errors import InvalidRequestError
from scriptorium.llm.registry import ProviderConfig, ProviderSpec
from scriptorium.llm.router import Router
from scriptorium.testing import FakeClient

REPO = Path(__file__).resolve().parents[2]
REQUEST = RunRequest(prompt_id="extract/contact", artifacts={"document": "docs/card.txt"})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the bundled project, a document to extract from, and a profile with limits."""
    shutil.copytree(REPO / "prompts", tmp_path / "prompts")
    shutil.copytree(REPO / "profiles", tmp_path / "profiles")
    (tmp_path / "profiles" / "paced.yaml").write_text(
        "provider: fake\nmodel: m\nlimits: {requests_per_minute: 60}\n", encoding="utf-8"
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "card.txt").write_text("Ada Lovelace, ada@example.com\n", encoding="utf-8")
    return tmp_path


def test_the_row_work_prepares_and_runs_as_the_engine_does(project: Path) -> None:
    engine = Engine(project)
    work = engine.row_work()
    assert work.prepare(REQUEST).request_hash == engine.prepare(REQUEST).request_hash
    assert work.run(REQUEST).output.sha256 == engine.run(REQUEST).output.sha256


def test_the_row_work_reports_each_profiles_limits(project: Path) -> None:
    work = Engine(project).row_work()
    limits = work.limits("paced")
    assert limits is not None
    assert limits.given() == {"requests_per_minute": 60}
    assert work.limits("offline") is None


def test_the_recipe_pickles_and_rebuilds_an_engine_over_the_same_project(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = Engine(project, repair=True, default_profile="offline")
    recipe = engine.row_work().recipe()
    monkeypatch.chdir(project.parent)  # the recipe holds absolute paths
    rebuilt = pickle.loads(pickle.dumps(recipe)).rebuild()
    assert rebuilt.prepare(REQUEST).request_hash == engine.prepare(REQUEST).request_hash
    assert dict(recipe.arguments) == {
        "root": str(project.resolve()),
        "artifact_root": None,
        "repair": True,
        "default_profile": "offline",
        "providers": (),
    }


def test_an_explicit_router_still_travels(project: Path) -> None:
    assert Engine(project, client=Router()).row_work().recipe() is not None


def test_an_engine_with_a_custom_client_or_an_env_mapping_gives_no_recipe(
    project: Path,
) -> None:
    with pytest.raises(InvalidRequestError, match="an engine with a custom client cannot run"):
        Engine(project, client=FakeClient()).row_work().recipe()
    with pytest.raises(InvalidRequestError, match="an engine given an env mapping cannot run"):
        Engine(project, env={}).row_work().recipe()


def _echo_client(config: ProviderConfig) -> FakeClient:
    return FakeClient(["echo"])


ECHO = ProviderSpec(name="echo-in-code", client=_echo_client)


def test_providers_given_in_code_travel_with_the_recipe(project: Path) -> None:
    """A spec given to the engine in code reaches the rebuilt engine (it pickles by reference)."""
    (project / "profiles" / "echo.yaml").write_text("provider: echo-in-code\n", encoding="utf-8")
    recipe = Engine(project, providers=[ECHO]).row_work().recipe()
    rebuilt = pickle.loads(pickle.dumps(recipe)).rebuild()
    result = rebuilt.run(REQUEST.model_copy(update={"profile": "echo"}))
    assert result.output.text == "echo"


def test_a_provider_given_as_a_closure_cannot_travel(project: Path) -> None:
    local = ProviderSpec(name="closure", client=lambda config: FakeClient(["x"]))
    with pytest.raises(InvalidRequestError, match="provider 'closure' was given in code"):
        Engine(project, providers=[local]).row_work().recipe()
