"""A gemini profile end to end: the CLI and the Engine, through the real SDK against
FakeGeminiServer; the base URL from ``GOOGLE_GEMINI_BASE_URL``, Vertex AI from ``options``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from scriptorium import Engine, RunRequest
from scriptorium.cli import main
from scriptorium.errors import APIKeyEnvMissingError, APIKeyRequiredError, InvalidRequestError
from scriptorium.testing import FakeGeminiServer

KEY = "AIza-engine-canary-0123456789ab"
SCHEMA = '{"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}'


@pytest.fixture
def server() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer() as fake:
        yield fake


@pytest.fixture
def root(tmp_path: Path, server: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "hello.prompt.md").write_text(
        "---\nprofile: gemini\n---\n## system\nBe brief.\n## user\nSay hello.\n", encoding="utf-8"
    )
    (tmp_path / "prompts" / "name.prompt.md").write_text(
        f"---\nprofile: gemini\noutput: {{format: json_schema, schema: {SCHEMA}}}\n---\n"
        "Give a name.\n",
        encoding="utf-8",
    )
    (tmp_path / "profiles" / "gemini.yaml").write_text(
        "provider: gemini\nmodel: gemini-2.5-flash\napi_key_env: GEMINI_API_KEY\n"
        "settings: {max_retries: 0}\n",
        encoding="utf-8",
    )
    (tmp_path / "profiles" / "vertex.yaml").write_text(
        f"provider: gemini\nmodel: gemini-2.5-pro\nendpoint: {server.url}\n"
        "options: {vertexai: true, project: proj-9, location: europe-west4, "
        "access_token_env: VERTEX_TOKEN}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
    monkeypatch.setenv("VERTEX_TOKEN", "ya29.engine-token-0123456789")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_run_goes_to_the_base_url_variable_with_the_system_instruction(
    root: Path, server: FakeGeminiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.reply("Hello from Gemini")
    assert main(["run", "hello"]) == 0
    assert capsys.readouterr().out == "Hello from Gemini\n"
    (sent,) = server.requests
    assert sent.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert sent.body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert sent.headers["x-goog-api-key"] == KEY


def test_verify_makes_one_small_real_request(
    root: Path, server: FakeGeminiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.reply("OK")
    assert main(["verify", "-p", "gemini", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["ok"], report["provider"]) == (True, "gemini")
    assert len(server.requests) == 1


def test_verify_on_vertex_ai_goes_to_the_profile_project(
    root: Path, server: FakeGeminiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.reply("OK")
    assert main(["verify", "-p", "vertex", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    (sent,) = server.requests
    assert sent.path.startswith("/v1beta1/projects/proj-9/locations/europe-west4/publishers/")
    assert sent.headers["authorization"] == "Bearer ya29.engine-token-0123456789"


def test_a_structured_run_is_validated_priced_and_streamed(
    root: Path, server: FakeGeminiServer
) -> None:
    engine = Engine(root)
    server.reply('{"name": "Ada"}', prompt_tokens=100, candidates_tokens=10)
    result = engine.run(RunRequest(prompt_id="name"))
    assert result.validation.valid
    assert json.loads(result.output.text) == {"name": "Ada"}
    assert result.usage.cost_micro == 55  # 100 * 0.30 + 10 * 2.50 micro-USD
    body = server.requests[-1].body
    assert body["generationConfig"]["responseMimeType"] == "application/json"
    server.reply('{"name": "Grace"}', thoughts="A name.", chunks=3)
    with engine.stream(RunRequest(prompt_id="name")) as events:
        kinds = [event.type for event in events]
        streamed = events.result()
    assert "reasoning_delta" in kinds
    assert kinds.index("reasoning_delta") < kinds.index("text_delta")
    assert json.loads(streamed.output.text) == {"name": "Grace"}
    assert streamed.output.reasoning == "A name."


def test_count_tokens_asks_the_api(root: Path, server: FakeGeminiServer) -> None:
    server.count_tokens = 77
    counted = Engine(root).count_tokens(RunRequest(prompt_id="hello"))
    assert (counted.input_tokens, counted.estimated, counted.provider) == (77, False, "gemini")


def test_check_reports_bad_gemini_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "a.prompt.md").write_text("---\nprofile: v\n---\nhi\n", "utf-8")
    (tmp_path / "profiles" / "v.yaml").write_text(
        "provider: gemini\nmodel: gemini-2.5-flash\n"
        "options: {vertexai: true, location: eu, colour: red}\n",
        "utf-8",
    )
    assert main(["check", "--root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "options.colour is not a gemini option" in out
    assert "options.vertexai needs options.project" in out


def test_a_vertex_ai_token_comes_from_the_engine_env_like_a_key(
    root: Path, server: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run reads the variable ``options.access_token_env`` names from the engine's ``env``
    (not the process environment) and the adapter sends it as the bearer token."""
    monkeypatch.delenv("VERTEX_TOKEN")
    engine = Engine(root, env={"VERTEX_TOKEN": "ya29.from-the-engine-env-0123"})
    prepared = engine.prepare(RunRequest(prompt_id="hello", profile="vertex"))
    assert (prepared.target.platform, prepared.target.region) == ("vertex", "europe-west4")
    server.reply("Hello from Vertex AI")
    result = engine.run(RunRequest(prompt_id="hello", profile="vertex"))
    assert result.output.text == "Hello from Vertex AI"
    (sent,) = server.requests
    assert sent.headers["authorization"] == "Bearer ya29.from-the-engine-env-0123"
    assert "x-goog-api-key" not in sent.headers
    assert "ya29.from-the-engine-env-0123" not in result.model_dump_json()


def test_prepare_refuses_what_a_gemini_profile_lacks_before_any_call(
    root: Path, server: FakeGeminiServer
) -> None:
    """A Gemini API profile needs a key and a model; a Vertex AI profile's token variable must be
    set, and it takes no API key variable."""
    profiles = root / "profiles"
    (profiles / "nokey.yaml").write_text("provider: gemini\nmodel: gemini-2.5-flash\n", "utf-8")
    (profiles / "nomodel.yaml").write_text(
        "provider: gemini\napi_key_env: GEMINI_API_KEY\n", "utf-8"
    )
    (profiles / "keyed-vertex.yaml").write_text(
        "provider: gemini\nmodel: gemini-2.5-pro\napi_key_env: GEMINI_API_KEY\n"
        "options: {vertexai: true, project: proj-9}\n",
        "utf-8",
    )
    with pytest.raises(APIKeyRequiredError) as required:
        Engine(root, env={}).prepare(RunRequest(prompt_id="hello", profile="nokey"))
    assert required.value.env_var == "GEMINI_API_KEY"
    engine = Engine(root, env={"GEMINI_API_KEY": KEY})
    # Naming no variable, the profile reads the conventional one.
    assert engine.prepare(RunRequest(prompt_id="hello", profile="nokey")).target.api_key_source == (
        "default"
    )
    with pytest.raises(InvalidRequestError) as missing:
        engine.prepare(RunRequest(prompt_id="hello", profile="nomodel"))
    assert missing.value.field == "model"
    with pytest.raises(APIKeyEnvMissingError) as unset:
        engine.prepare(RunRequest(prompt_id="hello", profile="vertex"))
    assert unset.value.env_var == "VERTEX_TOKEN"
    with pytest.raises(InvalidRequestError) as keyed:
        engine.prepare(RunRequest(prompt_id="hello", profile="keyed-vertex"))
    assert keyed.value.field == "api_key_env"
    assert server.requests == []
