"""Local model servers (``options.server``): the quirks table honoured on the wire, reasoning
read from where each server puts it, ``scriptorium verify --structured`` against loopback
stand-ins that enforce, ignore and refuse a schema, and ``check``'s warning."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scriptorium import Engine
from scriptorium._testing.http import Answer, RecordedRequest
from scriptorium._testing.openai_server import FakeOpenAIServer, completion_body
from scriptorium.check.project import check_project
from scriptorium.cli import main
from scriptorium.llm.model import LLMRequest, StructuredOutput, Target
from scriptorium.llm.openai.client import OpenAIClient
from scriptorium.llm.openai.servers import SERVERS, enforcement_warning, server_problems
from scriptorium.llm.retry import RetryHooks
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message
from scriptorium.usecase.structured_probe import PROBE_KEY, PROBE_TOKENS

KEY = "local-server-canary-71f0a2"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string", "format": "email"}},
}
HOOKS = RetryHooks(sleep=lambda _s: None, jitter=lambda _lo, _hi: 1.0)


def _request(server: FakeOpenAIServer, options: dict[str, Any], **fields: Any) -> LLMRequest:
    base: dict[str, Any] = {
        "target": Target(provider="openai", model="qwen3", endpoint=server.url),
        "api_key": KEY,
        "messages": (Message(role="user", content="Who?"),),
        "settings": ExecutionSettings(max_retries=0),
        "options": options,
    }
    base.update(fields)
    return LLMRequest(**base)


def _sent_format(server: FakeOpenAIServer, request: LLMRequest) -> Any:
    server.reply("{}")
    with OpenAIClient(hooks=HOOKS) as client:
        client.generate(request)
    body = server.requests[-1].body
    assert isinstance(body, dict)
    return body.get("response_format")


def test_vllm_gets_strict_and_the_whole_schema(server: FakeOpenAIServer) -> None:
    """vLLM constrains every schema it is given: strict, and no reduction for OpenAI's mode."""
    structured = StructuredOutput(schema_=SCHEMA, name="who", strategy="native")
    sent = _sent_format(server, _request(server, {"server": "vllm"}, structured_output=structured))
    assert sent["json_schema"]["strict"] is True
    assert sent["json_schema"]["schema"] == SCHEMA


def test_a_generic_server_gets_what_openai_takes(server: FakeOpenAIServer) -> None:
    structured = StructuredOutput(schema_=SCHEMA, name="who", strategy="native")
    sent = _sent_format(server, _request(server, {}, structured_output=structured))
    assert sent["json_schema"]["strict"] is True
    assert sent["json_schema"]["schema"]["additionalProperties"] is False


def test_lm_studio_gets_a_permissive_schema_for_a_json_prompt(server: FakeOpenAIServer) -> None:
    """LM Studio answers 400 to json_object: a json prompt sends a schema any value fits."""
    structured = StructuredOutput(format="json")
    sent = _sent_format(
        server, _request(server, {"server": "lmstudio"}, structured_output=structured)
    )
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["schema"] == {}
    assert sent["json_schema"]["strict"] is False
    structured = StructuredOutput(format="json")
    assert _sent_format(
        server, _request(server, {"server": "ollama"}, structured_output=structured)
    ) == {"type": "json_object"}


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_is_read_from_either_field(server: FakeOpenAIServer, field: str) -> None:
    message = {"role": "assistant", "content": "4", field: "two and two"}
    server.reply_json(completion_body(message, model="qwen3", finish_reason="stop", usage=None))
    with OpenAIClient(hooks=HOOKS) as client:
        response = client.generate(_request(server, {"server": "ollama"}))
    assert response.reasoning == "two and two"
    assert response.text == "4"


def test_the_table_is_complete_and_unknown_servers_are_named() -> None:
    assert set(SERVERS) == {"ollama", "vllm", "llamacpp", "lmstudio", "generic"}
    assert server_problems({"server": "vlm"}) == [
        "options.server 'vlm' must be one of ollama, vllm, llamacpp, lmstudio, generic; "
        "did you mean 'vllm'?"
    ]
    assert server_problems({"server": "vllm"}) == []


def test_which_servers_are_warned_about() -> None:
    local = "http://127.0.0.1:8080/v1"
    assert enforcement_warning(local, {"server": "llamacpp"}) is not None
    assert enforcement_warning("https://ollama.com/v1", {"server": "ollama"}) is not None
    assert enforcement_warning("http://127.0.0.1:11434/v1", {"server": "ollama"}) is None
    assert enforcement_warning(local, {"server": "vllm"}) is None
    assert enforcement_warning(local, {}) is None


# --- verify --structured against stand-ins ------------------------------------------------------


def _enforcing(request: RecordedRequest) -> Answer:
    """A server that holds the model to the schema: the first enum value under the one key."""
    body = request.body if isinstance(request.body, dict) else {}
    schema = body["response_format"]["json_schema"]["schema"]
    key = schema["required"][0]
    value = {key: schema["properties"][key]["enum"][0]}
    message = {"role": "assistant", "content": json.dumps(value)}
    return Answer.json(completion_body(message, model="m", finish_reason="stop", usage=None))


def _ignoring(_request: RecordedRequest) -> Answer:
    """A server that takes the schema and lets the model answer what it likes."""
    message = {"role": "assistant", "content": '{"colour": "blue", "reason": "calm"}'}
    return Answer.json(completion_body(message, model="m", finish_reason="stop", usage=None))


def _refusing(_request: RecordedRequest) -> Answer:
    """A server that rejects the form with 400."""
    error = {"message": "'response_format.type' must be 'json_schema' or 'text'", "type": "x"}
    return Answer.json({"error": error}, status=400)


def _project(root: Path, url: str, options: str = "{server: vllm}") -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "who.prompt.md").write_text(
        "---\nprofile: local\noutput: {format: json_schema, schema: {type: object}}\n---\nWho?\n"
    )
    (root / "profiles" / "local.yaml").write_text(
        f"provider: openai\nmodel: qwen3\nendpoint: {url}\napi_key_env: LOCAL_KEY\n"
        f"options: {options}\n"
    )
    return root


@pytest.mark.parametrize(
    ("stand_in", "verdict", "code"),
    [(_enforcing, "enforced", 0), (_ignoring, "not enforced", 1), (_refusing, "refused", 1)],
)
def test_verify_structured_reports_the_verdict_and_what_was_sent(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    server: FakeOpenAIServer,
    stand_in: Callable[[RecordedRequest], Answer],
    verdict: str,
    code: int,
) -> None:
    monkeypatch.chdir(_project(tmp_path, server.url))
    monkeypatch.setenv("LOCAL_KEY", KEY)
    server.push(stand_in)
    assert main(["verify", "-p", "local", "--structured", "--json"]) == code
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == verdict
    assert report["ok"] is (verdict == "enforced")
    assert report["server"] == "vllm"
    assert report["sent"]["schema"]["required"] == [PROBE_KEY]
    wire = report["sent"]["wire"]["response_format"]
    assert wire["json_schema"]["strict"] is True  # vLLM's row: strict, whole schema
    assert wire["json_schema"]["schema"]["properties"][PROBE_KEY]["enum"] == list(PROBE_TOKENS)
    body = server.requests[-1].body
    assert isinstance(body, dict)
    assert body["max_tokens"] <= 64
    assert KEY not in json.dumps(report)


def test_verify_structured_in_text(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    server: FakeOpenAIServer,
) -> None:
    monkeypatch.chdir(_project(tmp_path, server.url))
    monkeypatch.setenv("LOCAL_KEY", KEY)
    server.push(_ignoring)
    assert main(["verify", "-p", "local", "--structured"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("not enforced: profile 'local' (openai, server vllm)")
    assert '"colour": "blue"' in out


def test_check_warns_about_a_json_schema_prompt_on_a_server_that_may_not_enforce(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path / "a", "http://127.0.0.1:8080/v1", "{server: llamacpp}")
    problems = check_project(Engine(root, env={"LOCAL_KEY": KEY}).project_view())
    kinds = [(p.kind, p.severity) for p in problems]
    assert kinds == [("schema_not_enforced", "warning")]
    assert "llamacpp" in problems[0].message
    enforced = _project(tmp_path / "b", "http://127.0.0.1:8000/v1")
    assert check_project(Engine(enforced, env={"LOCAL_KEY": KEY}).project_view()) == []
