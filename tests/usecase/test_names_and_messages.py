"""Messages that name what was expected: a suggestion for a mistyped name, the type or limit an
input failed, every issue of an invalid output with its JSON Pointer; and requests as generated
clients and Python callers write them (nulls for absent fields, ``pathlib`` paths)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scriptorium import Engine, RunRequest, errors
from scriptorium.testing import FakeClient

SCHEMA = {
    "type": "object",
    "required": ["name", "age", "tags"],
    "properties": {
        "name": {"type": "string", "minLength": 2},
        "age": {"type": "integer", "maximum": 130},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    },
}


def _project(root: Path) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    inputs = {
        "type": "object",
        "properties": {
            "lines": {"type": "integer", "minimum": 1, "maximum": 10},
            "tone": {"enum": ["plain", "warm"]},
            "title": {"type": "string", "maxLength": 5},
        },
    }
    (root / "prompts" / "poem.prompt.md").write_text(
        f"---\nprofile: canned\ninputs: {json.dumps(inputs)}\n"
        "artifacts:\n  document: {required: false}\n---\n"
        "Write {{ lines | default(3) }} lines.\n"
    )
    (root / "prompts" / "person.prompt.md").write_text(
        f"---\nprofile: canned\noutput:\n  format: json_schema\n  schema: {json.dumps(SCHEMA)}\n"
        "  strategy: auto\n---\nWho?\n"
    )
    (root / "profiles" / "canned.yaml").write_text("provider: fake\noptions: {responses: [ok]}\n")
    (root / "profiles" / "claude.yaml").write_text(
        "provider: anthropic\nmodel: claude-sonnet-4-6\napi_key_env: NAMES_KEY\n"
    )
    (root / "doc.txt").write_text("a document\n")
    return root


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return Engine(_project(tmp_path / "project"), env={"NAMES_KEY": "sk-names-test-0000"})


def test_a_mistyped_prompt_or_profile_gets_a_suggestion(engine: Engine) -> None:
    with pytest.raises(errors.PromptLoadError, match=r"did you mean 'poem'\?"):
        engine.prepare("peom")
    with pytest.raises(errors.ProfileLoadError, match=r"did you mean 'canned'\?"):
        engine.prepare("poem", profile="caned")
    with pytest.raises(errors.PromptLoadError) as info:
        engine.prepare("zzzzzz")
    assert "did you mean" not in str(info.value)  # nothing close: no guess


def test_a_mistyped_artifact_lists_the_declared_ones_and_the_closest(engine: Engine) -> None:
    with pytest.raises(errors.InvalidRequestError) as info:
        engine.prepare("poem", artifacts={"documnet": "doc.txt"})
    message = str(info.value)
    assert "declared artifacts: 'document'" in message
    assert "did you mean 'document'?" in message


def test_a_mistyped_input_gets_a_suggestion(engine: Engine) -> None:
    with pytest.raises(errors.InvalidRequestError, match=r"did you mean 'lines'\?"):
        engine.prepare("poem", inputs={"line": 4})


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        ({"lines": "three"}, "/lines: expected integer, got string (fails 'type')"),
        ({"lines": 0}, "/lines: expected at least 1 (fails 'minimum')"),
        ({"lines": 11}, "/lines: expected at most 10 (fails 'maximum')"),
        ({"tone": "loud"}, '/tone: expected one of "plain", "warm" (fails \'enum\')'),
        ({"title": "far too long"}, "/title: expected at most 5 characters (fails 'maxLength')"),
    ],
)
def test_an_input_failing_its_schema_names_the_expected_type_or_limit(
    engine: Engine, inputs: dict[str, object], expected: str
) -> None:
    with pytest.raises(errors.InvalidRequestError) as info:
        engine.prepare("poem", inputs=inputs)
    assert expected in str(info.value)
    for value in inputs.values():
        if isinstance(value, str):
            assert value not in str(info.value)  # the value itself is never quoted


def test_an_invalid_output_reports_every_issue_with_its_pointer(tmp_path: Path) -> None:
    reply = '{"name": "A", "age": 200, "tags": ["x", 3, "y"]}'
    engine = Engine(_project(tmp_path / "p"), client=FakeClient([reply]))
    result = engine.run("person")
    assert not result.validation.valid
    with pytest.raises(errors.OutputInvalidError) as info:
        result.raise_for_validation()
    message = str(info.value)
    for pointer in ("/name", "/age", "/tags/1", "/tags"):
        assert f"{pointer}: " in message
    assert message.count(";") >= len(result.validation.issues) - 1


def test_prepare_shows_the_strategy_the_adapter_uses_and_what_it_drops(engine: Engine) -> None:
    prepared = engine.prepare("person", profile="claude")
    assert prepared.output.strategy == "native"  # `auto`, resolved for this model
    assert set(prepared.schema_dropped) >= {"minLength", "maximum", "maxItems"}
    offline = engine.prepare("person")  # the fake provider: sent as it is
    assert offline.output.strategy == "auto"
    assert offline.schema_dropped == ()


def test_nulls_from_a_generated_client_mean_absent() -> None:
    body = {
        "prompt_id": "poem",
        "profile": None,
        "inputs": None,
        "artifacts": None,
        "metadata": None,
        "overrides": None,
    }
    request = RunRequest.model_validate_json(json.dumps(body))
    assert request == RunRequest(prompt_id="poem")
    assert RunRequest.model_validate(body) == request
    assert RunRequest(prompt_id="poem", inputs=None) == request  # a null from a caller


def test_the_kernel_reads_nulls_the_same_way() -> None:
    from scriptorium.kernel.payload import PromptPayload, parse_payload

    payload = parse_payload(
        {
            "prompt_id": "poem",
            "inputs": None,
            "artifacts": None,
            "overrides": None,
            "metadata": None,
        }
    )
    assert payload == PromptPayload(prompt_id="poem")


def test_a_pathlib_path_is_an_artifact_reference(engine: Engine) -> None:
    prepared = engine.prepare("poem", artifacts={"document": Path("doc.txt")})
    assert prepared.artifacts[0].ref == "doc.txt"
    assert RunRequest(prompt_id="poem", artifacts={"document": Path("a/b.txt")}).artifacts == {
        "document": "a/b.txt"
    }


def test_an_absolute_path_is_refused_with_a_hint(engine: Engine) -> None:
    absolute = str((engine.root / "doc.txt").resolve())
    with pytest.raises(errors.ArtifactLoadError) as info:
        engine.prepare("poem", artifacts={"document": absolute})
    message = str(info.value)
    assert "absolute references are refused" in message
    assert "relative to the artifact root" in message
    assert "--artifact-root" in message


def test_an_artifact_not_found_names_the_directory_searched(engine: Engine) -> None:
    with pytest.raises(errors.ArtifactLoadError) as info:
        engine.prepare("poem", artifacts={"document": "nope.txt"})
    assert f"nope.txt not found in {engine.root.resolve()}" in str(info.value)
