"""Engine: the composition root over a project directory, with an injected client."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from scriptorium import Engine, errors
from scriptorium.testing import FakeClient
from scriptorium.usecase import RunRequest, RunResult

REPO = Path(__file__).resolve().parents[2]
GOOD = '{"name": "Ada Lovelace", "email": "ada@example.com", "phone": null, "organization": null}'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the bundled project, plus a document to extract from."""
    shutil.copytree(REPO / "prompts", tmp_path / "prompts")
    shutil.copytree(REPO / "profiles", tmp_path / "profiles")
    # The prompts' tests files read their artifacts from examples/.
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "card.txt").write_text("Ada Lovelace, ada@example.com\n", encoding="utf-8")
    return tmp_path


def test_run_accepts_an_id_with_fields_or_a_request(project: Path) -> None:
    """run() takes a prompt id plus RunRequest fields, or a RunRequest."""
    engine = Engine(project, client=FakeClient([GOOD]))
    by_id = engine.run("extract/contact", artifacts={"document": "docs/card.txt"})
    by_request = engine.run(
        RunRequest(prompt_id="extract/contact", artifacts={"document": "docs/card.txt"})
    )
    assert by_id.validation.valid
    assert by_id.prepared.request_hash == by_request.prepared.request_hash


def test_both_forms_at_once_are_refused(project: Path) -> None:
    """A RunRequest plus keyword fields is ambiguous."""
    engine = Engine(project, client=FakeClient([GOOD]))
    with pytest.raises(errors.InvalidRequestError):
        engine.run(RunRequest(prompt_id="extract/contact"), profile="offline")


def test_unknown_request_fields_are_invalid_requests(project: Path) -> None:
    """A misspelt field is an InvalidRequestError, not a TypeError."""
    engine = Engine(project, client=FakeClient([GOOD]))
    with pytest.raises(errors.InvalidRequestError):
        engine.prepare("extract/contact", artifact={"document": "docs/card.txt"})


def test_injected_client_serves_every_profile_but_keys_still_matter(project: Path) -> None:
    """client= replaces the router, yet an anthropic profile still needs its key variable."""
    client = FakeClient([GOOD])
    engine = Engine(project, client=client, env={})
    with pytest.raises(errors.APIKeyEnvMissingError):
        engine.run("extract/contact", profile="claude", artifacts={"document": "docs/card.txt"})
    assert client.calls == 0
    keyed = Engine(project, client=client, env={"ANTHROPIC_API_KEY": "k-value-0001"})
    result = keyed.run("extract/contact", profile="claude", artifacts={"document": "docs/card.txt"})
    assert result.prepared.target.provider == "anthropic"
    assert client.calls == 1


def test_repair_is_off_unless_asked(project: Path) -> None:
    """The engine adds the default repairer only with repair=True."""
    bad = '{"name": "Ada"}'
    plain = Engine(project, client=FakeClient([bad, GOOD]))
    result = plain.run("extract/contact", artifacts={"document": "docs/card.txt"})
    assert not result.validation.valid
    assert len(result.attempts) == 1
    repairing = Engine(project, client=FakeClient([bad, GOOD]), repair=True)
    repaired = repairing.run("extract/contact", artifacts={"document": "docs/card.txt"})
    assert repaired.validation.repaired


def test_artifact_root_moves_where_references_resolve(project: Path) -> None:
    """artifact_root= makes references relative to another directory."""
    engine = Engine(project, client=FakeClient([GOOD]), artifact_root=project / "docs")
    result = engine.run("extract/contact", artifacts={"document": "card.txt"})
    assert result.prepared.artifacts[0].ref == "card.txt"
    with pytest.raises(errors.ArtifactLoadError):
        engine.run("extract/contact", artifacts={"document": "../prompts/summarize.prompt.md"})


def test_default_profile_applies_when_none_is_named(project: Path) -> None:
    """default_profile= is the last resort of profile selection."""
    (project / "prompts" / "bare.prompt.md").write_text("Say hi.\n", encoding="utf-8")
    with pytest.raises(errors.ProfileRequiredError):
        Engine(project, client=FakeClient(["hi"])).prepare("bare")
    prepared = Engine(project, client=FakeClient(["hi"]), default_profile="offline").prepare("bare")
    assert prepared.profile == "offline"


def test_run_many_keeps_order_and_per_item_errors(project: Path) -> None:
    """Results come back in input order; a failing item is its error, the rest still run."""

    def echo(request: object) -> str:
        return GOOD

    engine = Engine(project, client=FakeClient([echo]))
    requests = [
        RunRequest(prompt_id="extract/contact", artifacts={"document": "docs/card.txt"}),
        RunRequest(prompt_id="extract/contact", artifacts={"document": "docs/missing.txt"}),
        RunRequest(prompt_id="nope"),
        RunRequest(prompt_id="extract/contact", artifacts={"document": "docs/card.txt"}),
    ]
    results = engine.run_many(requests, concurrency=3)
    assert isinstance(results[0], RunResult)
    assert isinstance(results[1], errors.ArtifactLoadError)
    assert isinstance(results[2], errors.PromptLoadError)
    assert isinstance(results[3], RunResult)
    asynced = asyncio.run(engine.arun_many(requests, concurrency=2))
    assert [type(r) for r in asynced] == [type(r) for r in results]


def test_run_many_rejects_a_zero_concurrency(project: Path) -> None:
    """concurrency must be at least one."""
    engine = Engine(project, client=FakeClient([GOOD]))
    with pytest.raises(errors.InvalidRequestError):
        engine.run_many([], concurrency=0)


def test_arun_matches_run(project: Path) -> None:
    """The async engine path gives the same prepared run and verdict."""
    engine = Engine(project, client=FakeClient([GOOD]))
    sync = engine.run("extract/contact", artifacts={"document": "docs/card.txt"})
    asynced = asyncio.run(engine.arun("extract/contact", artifacts={"document": "docs/card.txt"}))
    assert asynced.prepared == sync.prepared
    assert asynced.validation == sync.validation


def test_lists_and_check_cover_the_project(project: Path) -> None:
    """list_prompts/list_profiles see the files; check() is clean on the bundled examples."""
    engine = Engine(project)
    assert "extract/contact" in engine.list_prompts()
    assert "offline" in engine.list_profiles()
    assert engine.check() == []


def test_the_offline_profile_runs_without_a_client(project: Path) -> None:
    """With no client, the router serves the bundled fake profile: no key, no network."""
    result = Engine(project).run("extract/contact", artifacts={"document": "docs/card.txt"})
    assert result.validation.valid
    assert result.prepared.target.provider == "fake"


def test_engine_construction_does_no_io(tmp_path: Path) -> None:
    """An engine over a directory that does not exist can be built; errors come at use."""
    engine = Engine(tmp_path / "absent")
    with pytest.raises(errors.PromptLoadError):
        engine.prepare("anything")


def test_edits_to_prompt_and_schema_files_are_seen_by_the_same_engine(project: Path) -> None:
    """Caches keyed by file identity never hide an edit: the next run sees the new schema."""
    engine = Engine(project, client=FakeClient([GOOD]))
    first = engine.run("extract/contact", artifacts={"document": "docs/card.txt"})
    assert first.validation.valid
    schema_path = project / "prompts" / "extract" / "contact.schema.json"
    schema = schema_path.read_text(encoding="utf-8")
    schema_path.write_text(
        schema.replace('"phone", "organization"', '"phone", "organization", "title"'),
        encoding="utf-8",
    )
    second = engine.run("extract/contact", artifacts={"document": "docs/card.txt"})
    assert second.prepared.output.schema_hash != first.prepared.output.schema_hash
    assert second.prepared.definition_hash != first.prepared.definition_hash
    assert not second.validation.valid
    assert any(i.keyword == "required" for i in second.validation.issues)
