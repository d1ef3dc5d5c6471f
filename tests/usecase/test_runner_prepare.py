"""Runner.prepare: the eight steps in order, each failure as its sentinel, before any LLM call."""

from __future__ import annotations

import pytest

from scriptorium import errors
from scriptorium.testing import FakeClient
from scriptorium.usecase import Overrides, RunRequest
from tests.conftest import PROFILES, PROMPTS, RunnerFactory


def test_prepare_reports_messages_target_settings_and_hashes(make_runner: RunnerFactory) -> None:
    """A prepared run carries the rendered messages, the target, settings and every hash."""
    client = FakeClient()
    prepared = make_runner(client).prepare(RunRequest(prompt_id="greet", inputs={"name": "Ada"}))
    assert prepared.system == "You greet people."
    assert [(m.role, m.content) for m in prepared.messages] == [("user", "Hello Ada!")]
    assert prepared.profile == "offline"
    assert prepared.target.provider == "fake"
    assert prepared.target.model == "fake-1"
    assert prepared.prompt_version == 1
    for value in (
        prepared.definition_hash,
        prepared.profile_hash,
        prepared.inputs_hash,
        prepared.rendered_prompt_hash,
        prepared.request_hash,
    ):
        assert value.startswith("sha256:")
        assert len(value) == 71
    assert client.calls == 0


def test_settings_sources_say_where_each_value_came_from(make_runner: RunnerFactory) -> None:
    """Defaults < profile < overrides, and settings_sources names the winner of each field."""
    runner = make_runner(FakeClient())
    request = RunRequest(
        prompt_id="greet",
        profile="tuned",
        inputs={"name": "Ada"},
        overrides=Overrides(temperature=0.0, top_k=0),
    )
    prepared = runner.prepare(request)
    assert prepared.settings.max_tokens == 200
    assert prepared.settings_sources["max_tokens"] == "profile"
    assert prepared.settings.temperature == 0.0
    assert prepared.settings_sources["temperature"] == "override"
    assert prepared.settings.top_k == 0
    assert prepared.settings_sources["top_k"] == "override"
    assert prepared.settings_sources["timeout_s"] == "default"


def test_model_override_replaces_the_profile_model(make_runner: RunnerFactory) -> None:
    """An override model goes to the target and into the request hash."""
    runner = make_runner(FakeClient())
    base = runner.prepare(RunRequest(prompt_id="greet", inputs={"name": "Ada"}))
    other = runner.prepare(
        RunRequest(prompt_id="greet", inputs={"name": "Ada"}, overrides=Overrides(model="m2"))
    )
    assert other.target.model == "m2"
    assert other.request_hash != base.request_hash
    assert other.definition_hash == base.definition_hash


def _fails(
    make_runner: RunnerFactory,
    request: RunRequest,
    error: type[errors.ScriptoriumError],
    **kwargs: object,
) -> errors.ScriptoriumError:
    client = FakeClient()
    runner = make_runner(client, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(error) as caught:
        runner.run(request)
    assert client.calls == 0, "no LLM call may happen after a preparation failure"
    return caught.value


@pytest.mark.parametrize("bad_id", ["", "Greet", "../etc/passwd", "a/b/c/d/e", "x" * 65, "/abs"])
def test_bad_prompt_ids_are_invalid_requests(make_runner: RunnerFactory, bad_id: str) -> None:
    """Ids outside the id pattern fail before anything is looked up."""
    _fails(make_runner, RunRequest(prompt_id=bad_id), errors.InvalidRequestError)


def test_missing_prompt_is_a_prompt_load_error(make_runner: RunnerFactory) -> None:
    """An unknown prompt id is PromptLoadError naming the prompt."""
    err = _fails(make_runner, RunRequest(prompt_id="nope"), errors.PromptLoadError)
    assert err.prompt_id == "nope"


def test_invalid_front_matter_is_a_prompt_load_error(make_runner: RunnerFactory) -> None:
    """Unknown front-matter keys make the definition fail to load."""
    prompts = {"bad": "---\nbogus_key: 1\n---\nhi\n"}
    _fails(make_runner, RunRequest(prompt_id="bad"), errors.PromptLoadError, prompts=prompts)


def test_no_profile_anywhere_is_profile_required(make_runner: RunnerFactory) -> None:
    """Neither request, definition nor engine default names a profile."""
    _fails(make_runner, RunRequest(prompt_id="classify"), errors.ProfileRequiredError)


def test_engine_default_profile_is_used_last(make_runner: RunnerFactory) -> None:
    """The engine's default profile applies when request and definition name none."""
    runner = make_runner(FakeClient(), default_profile="tuned")
    prepared = runner.prepare(RunRequest(prompt_id="classify", inputs={"text": "x"}))
    assert prepared.profile == "tuned"


def test_explicit_profile_beats_the_definition(make_runner: RunnerFactory) -> None:
    """The request's profile wins over the definition's."""
    runner = make_runner(FakeClient(), default_profile="offline")
    prepared = runner.prepare(RunRequest(prompt_id="greet", profile="tuned", inputs={"name": "A"}))
    assert prepared.profile == "tuned"


def test_missing_profile_is_a_profile_load_error(make_runner: RunnerFactory) -> None:
    """A named profile that does not exist is ProfileLoadError."""
    err = _fails(
        make_runner, RunRequest(prompt_id="greet", profile="ghost"), errors.ProfileLoadError
    )
    assert err.profile == "ghost"


def test_unset_key_variable_is_api_key_env_missing(make_runner: RunnerFactory) -> None:
    """The profile's api_key_env unset (or empty) is named, never valued."""
    for env in ({}, {"ANTHROPIC_API_KEY": ""}):
        err = _fails(
            make_runner, RunRequest(prompt_id="claude/hello"), errors.APIKeyEnvMissingError, env=env
        )
        assert isinstance(err, errors.APIKeyEnvMissingError)
        assert err.env_var == "ANTHROPIC_API_KEY"
        assert "ANTHROPIC_API_KEY" in str(err)


def test_keyed_provider_without_any_key_is_api_key_required(make_runner: RunnerFactory) -> None:
    """anthropic needs a key by name, even though the injected client is a fake."""
    _fails(
        make_runner,
        RunRequest(prompt_id="greet", profile="keyless", inputs={"name": "A"}),
        errors.APIKeyRequiredError,
    )


def test_direct_key_wins_and_reaches_only_the_llm_request(make_runner: RunnerFactory) -> None:
    """A direct api_key satisfies a keyed provider; it reaches LLMRequest.api_key only."""
    client = FakeClient(["hi"])
    runner = make_runner(client, env={"ANTHROPIC_API_KEY": "from-env-value"})
    runner.run(RunRequest(prompt_id="claude/hello", api_key="direct-key-value"))
    key = client.requests[0].api_key
    assert key is not None
    assert key.get_secret_value() == "direct-key-value"


def test_env_key_is_read_from_the_injected_env(make_runner: RunnerFactory) -> None:
    """With no direct key, the value of the profile's variable is used."""
    client = FakeClient(["hi"])
    make_runner(client, env={"ANTHROPIC_API_KEY": "env-key-value"}).run(
        RunRequest(prompt_id="claude/hello")
    )
    key = client.requests[0].api_key
    assert key is not None
    assert key.get_secret_value() == "env-key-value"


def test_missing_schema_file_is_a_validation_error(make_runner: RunnerFactory) -> None:
    """A json_schema prompt whose schema cannot be loaded fails before the LLM call."""
    prompts = {
        "x": "---\nprofile: offline\noutput: {format: json_schema, schema: nope.json}\n---\nhi\n"
    }
    _fails(make_runner, RunRequest(prompt_id="x"), errors.ValidationError, prompts=prompts)


def test_invalid_schema_is_a_validation_error(make_runner: RunnerFactory) -> None:
    """A schema that is not a valid JSON Schema fails before the LLM call."""
    prompts = {
        "x": "---\nprofile: offline\noutput: {format: json_schema, schema: {type: 12}}\n---\nhi\n"
    }
    _fails(make_runner, RunRequest(prompt_id="x"), errors.ValidationError, prompts=prompts)


def test_inputs_failing_their_schema_are_invalid_requests(make_runner: RunnerFactory) -> None:
    """Inputs are checked against the definition's inputs schema before rendering."""
    _fails(make_runner, RunRequest(prompt_id="greet", inputs={}), errors.InvalidRequestError)
    _fails(
        make_runner, RunRequest(prompt_id="greet", inputs={"name": 3}), errors.InvalidRequestError
    )


def test_undeclared_artifact_is_an_invalid_request(make_runner: RunnerFactory) -> None:
    """Passing an artifact the prompt does not declare is refused."""
    request = RunRequest(
        prompt_id="extract/contact", artifacts={"document": "doc.txt", "extra": "other.txt"}
    )
    _fails(make_runner, request, errors.InvalidRequestError)


def test_missing_required_artifact_is_an_invalid_request(make_runner: RunnerFactory) -> None:
    """A required artifact left out is refused."""
    _fails(make_runner, RunRequest(prompt_id="extract/contact"), errors.InvalidRequestError)


def test_unreadable_artifact_is_an_artifact_load_error(make_runner: RunnerFactory) -> None:
    """A reference to nothing is ArtifactLoadError naming the artifact."""
    request = RunRequest(prompt_id="extract/contact", artifacts={"document": "missing.txt"})
    err = _fails(make_runner, request, errors.ArtifactLoadError)
    assert isinstance(err, errors.ArtifactLoadError)
    assert err.artifact == "document"


def test_undefined_template_variable_is_a_render_error(make_runner: RunnerFactory) -> None:
    """A template using an input nobody gave fails to render."""
    prompts = {"x": "---\nprofile: offline\n---\nHi {{ who }}\n"}
    _fails(make_runner, RunRequest(prompt_id="x"), errors.PromptRenderError, prompts=prompts)


def test_model_missing_for_keyed_provider_is_an_invalid_request(make_runner: RunnerFactory) -> None:
    """A keyed provider with no model anywhere cannot be called."""
    profiles = {**PROFILES, "nomodel": {"provider": "anthropic", "api_key_env": "K"}}
    _fails(
        make_runner,
        RunRequest(prompt_id="greet", profile="nomodel", inputs={"name": "A"}),
        errors.InvalidRequestError,
        profiles=profiles,
        env={"K": "v"},
    )


def test_bad_endpoint_override_is_an_invalid_request(make_runner: RunnerFactory) -> None:
    """An http endpoint to a non-loopback host is refused."""
    request = RunRequest(
        prompt_id="greet",
        inputs={"name": "A"},
        overrides=Overrides(endpoint="http://example.com/v1"),
    )
    _fails(make_runner, request, errors.InvalidRequestError)


def test_inputs_that_are_not_json_are_invalid_requests(make_runner: RunnerFactory) -> None:
    """Inputs must be JSON data, since they are hashed canonically."""
    request = RunRequest(prompt_id="greet", inputs={"name": "A", "when": object()})
    _fails(make_runner, request, errors.InvalidRequestError)


def test_hashes_are_stable_for_equal_requests(make_runner: RunnerFactory) -> None:
    """Preparing the same request twice gives the same hashes."""
    runner = make_runner(FakeClient())
    request = RunRequest(prompt_id="extract/contact", artifacts={"document": "doc.txt"})
    first, second = runner.prepare(request), runner.prepare(request)
    assert first == second


def test_hashes_follow_what_changed(make_runner: RunnerFactory) -> None:
    """Artifact bytes, inputs, template and schema edits each move the right hashes."""
    base_request = RunRequest(prompt_id="extract/contact", artifacts={"document": "doc.txt"})
    base = make_runner(FakeClient()).prepare(base_request)

    other_doc = make_runner(FakeClient(), files={"doc.txt": "Someone Else"}).prepare(base_request)
    assert other_doc.artifacts[0].sha256 != base.artifacts[0].sha256
    assert other_doc.request_hash != base.request_hash
    assert other_doc.definition_hash == base.definition_hash

    edited_template = dict(PROMPTS)
    edited_template["extract/contact"] = PROMPTS["extract/contact"].replace(
        "Extract the contact", "Extract the person"
    )
    edited = make_runner(FakeClient(), prompts=edited_template).prepare(base_request)
    assert edited.definition_hash != base.definition_hash

    edited_schema = dict(PROMPTS)
    edited_schema["extract/contact"] = PROMPTS["extract/contact"].replace(
        "email: {type: string}}", "email: {type: string, format: email}}"
    )
    reschema = make_runner(FakeClient(), prompts=edited_schema).prepare(base_request)
    assert reschema.definition_hash != base.definition_hash
    assert reschema.output.schema_hash != base.output.schema_hash

    runner = make_runner(FakeClient())
    a = runner.prepare(RunRequest(prompt_id="greet", inputs={"name": "Ada"}))
    b = runner.prepare(RunRequest(prompt_id="greet", inputs={"name": "Bob"}))
    assert a.inputs_hash != b.inputs_hash
    assert a.request_hash != b.request_hash
    assert a.definition_hash == b.definition_hash

    c = runner.prepare(
        RunRequest(prompt_id="greet", inputs={"name": "Ada"}, overrides=Overrides(max_tokens=9))
    )
    assert c.request_hash != a.request_hash
    assert c.rendered_prompt_hash == a.rendered_prompt_hash


def test_formatting_only_yaml_edits_keep_the_definition_hash(make_runner: RunnerFactory) -> None:
    """Re-flowing the front matter without changing its meaning keeps definition_hash."""
    reflowed = dict(PROMPTS)
    reflowed["greet"] = PROMPTS["greet"].replace(
        "  properties: {name: {type: string}}", "  properties:\n    name:\n      type: string"
    )
    request = RunRequest(prompt_id="greet", inputs={"name": "Ada"})
    a = make_runner(FakeClient()).prepare(request)
    b = make_runner(FakeClient(), prompts=reflowed).prepare(request)
    assert a.definition_hash == b.definition_hash


def test_prepared_run_names_the_key_variable_only(make_runner: RunnerFactory) -> None:
    """PreparedRun keeps api_key_env, never the value."""
    runner = make_runner(FakeClient(), env={"ANTHROPIC_API_KEY": "canary-value-123"})
    prepared = runner.prepare(RunRequest(prompt_id="claude/hello"))
    assert prepared.target.api_key_env == "ANTHROPIC_API_KEY"
    assert "canary-value-123" not in prepared.model_dump_json()
