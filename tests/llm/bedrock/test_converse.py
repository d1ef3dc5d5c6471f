"""``provider: bedrock``: any Bedrock model through Converse and ConverseStream, through the real
boto3 against ``FakeBedrockServer`` on loopback: the request on the wire, structured output by
tool and prompt, usage and price, endings, errors by Bedrock's names, streams and their cut-off,
reasoning, and the AWS session token kept out of every message."""

from __future__ import annotations

import asyncio
import base64
import json
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from scriptorium import Engine
from scriptorium.errors import InvalidRequestError, LLMGenerateError
from scriptorium.llm.bedrock.api import base_model, takes_tools
from scriptorium.testing import FakeBedrockServer
from scriptorium.usecase.events import TextDelta
from scriptorium.usecase.stream import RunStream

AWS_KEY_ID = "AKIAFAKE0CONVERSE00"
AWS_SECRET = "converse-secret-canary-5e2a9d"
AWS_TOKEN = "converse-session-token-canary-0b7c41f3"
NOVA = "us.amazon.nova-pro-v1:0"

SENTIMENT = """---
profile: {profile}
inputs: {{type: object, properties: {{text: {{type: string}}}}}}
output:
  format: json_schema
  schema:
    type: object
    required: [label]
    additionalProperties: false
    properties: {{label: {{enum: [positive, negative]}}}}
---
## system
Classify.

## user
{{{{ text }}}}
"""
NOTE = """---
profile: {profile}
---
## system
Be brief.

## user
Say hello.
"""


@pytest.fixture(autouse=True)
def aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fake credentials (with a session token) in the environment; nothing else of the chain."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", AWS_TOKEN)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def server() -> Iterator[FakeBedrockServer]:
    with FakeBedrockServer(default_text=None) as fake:
        yield fake


def _project(
    tmp_path: Path, server: FakeBedrockServer, model: str = NOVA, extra: str = ""
) -> Engine:
    (tmp_path / "prompts").mkdir(exist_ok=True)
    (tmp_path / "profiles").mkdir(exist_ok=True)
    (tmp_path / "profiles" / "aws.yaml").write_text(
        f"provider: bedrock\nmodel: {model}\nendpoint: {server.url}\n"
        "allow_insecure_http: true\noptions: {region: us-east-1}\n"
        "settings: {max_tokens: 200, max_retries: 1}\n" + extra
    )
    (tmp_path / "prompts" / "sentiment.prompt.md").write_text(SENTIMENT.format(profile="aws"))
    (tmp_path / "prompts" / "note.prompt.md").write_text(NOTE.format(profile="aws"))
    return Engine(tmp_path)


def _sent(server: FakeBedrockServer) -> dict[str, Any]:
    body = server.requests[-1].body
    assert isinstance(body, dict)
    return body


def test_a_text_answer_and_the_request_on_the_wire(
    tmp_path: Path, server: FakeBedrockServer
) -> None:
    server.reply("Hello there.", usage={"input_tokens": 1000, "output_tokens": 500})
    result = _project(tmp_path, server).run("note")
    assert result.output.text == "Hello there."
    request = server.requests[-1]
    assert unquote(request.path) == f"/model/{NOVA}/converse"
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=" + AWS_KEY_ID)
    body = _sent(server)
    assert body["system"] == [{"text": "Be brief."}]
    assert body["messages"] == [{"role": "user", "content": [{"text": "Say hello."}]}]
    assert body["inferenceConfig"] == {"maxTokens": 200}
    assert result.usage.input_tokens == 1000
    assert result.usage.output_tokens == 500
    # Nova Pro at 0.80 / 3.20 USD per million tokens: 800 + 1,600 micro-USD.
    assert result.usage.cost_micro == 2400
    assert result.model == NOVA
    assert result.attempts[-1].provider == "bedrock"


def test_auto_forces_a_tool_for_a_model_that_takes_tools(
    tmp_path: Path, server: FakeBedrockServer
) -> None:
    server.reply_tool({"label": "positive"})
    result = _project(tmp_path, server).run("sentiment", inputs={"text": "great"})
    assert result.validation.valid
    assert result.validation.value == {"label": "positive"}
    config = _sent(server)["toolConfig"]
    (tool,) = config["tools"]
    assert tool["toolSpec"]["inputSchema"]["json"]["required"] == ["label"]
    assert config["toolChoice"] == {"tool": {"name": tool["toolSpec"]["name"]}}
    assert result.finish_reason == "stop"


def test_a_model_without_tools_gets_the_schema_in_the_system_text(
    tmp_path: Path, server: FakeBedrockServer
) -> None:
    server.reply('{"label": "negative"}')
    result = _project(tmp_path, server, model="cohere.command-light-text-v14").run(
        "sentiment", inputs={"text": "bad"}
    )
    assert result.validation.value == {"label": "negative"}
    body = _sent(server)
    assert "toolConfig" not in body
    assert "JSON Schema" in body["system"][0]["text"]


def test_native_is_refused_at_prepare(tmp_path: Path, server: FakeBedrockServer) -> None:
    engine = _project(tmp_path, server)
    native = SENTIMENT.format(profile="aws").replace(
        "  format: json_schema", "  format: json_schema\n  strategy: native"
    )
    (tmp_path / "prompts" / "native.prompt.md").write_text(native)
    with pytest.raises(InvalidRequestError, match="tool or prompt"):
        engine.prepare("native", inputs={"text": "x"})
    assert not server.requests


@pytest.mark.parametrize(
    ("stop", "finish", "valid"),
    [("max_tokens", "length", False), ("refusal", "refusal", False), ("end_turn", "stop", True)],
)
def test_endings(
    tmp_path: Path, server: FakeBedrockServer, stop: str, finish: str, valid: bool
) -> None:
    server.reply("Hello", stop_reason=stop)
    result = _project(tmp_path, server).run("note")
    assert result.finish_reason == finish
    assert result.attempts[-1].finish_reason == finish
    assert result.validation.valid is valid


@pytest.mark.parametrize(
    ("status", "reason", "calls"),
    [
        (429, "rate_limited", 2),
        (503, "overloaded", 2),
        (400, "invalid_request", 1),
        (403, "permission", 1),
    ],
)
def test_errors_by_bedrock_s_names(
    tmp_path: Path, server: FakeBedrockServer, status: int, reason: str, calls: int
) -> None:
    for _ in range(2):
        server.fail(status, message=f"no: {AWS_TOKEN}")
    with pytest.raises(LLMGenerateError) as caught:
        _project(tmp_path, server).run("note")
    err = caught.value
    assert err.reason == reason
    assert len(server.requests) == calls
    for shown in (str(err), repr(err), err.message, pickle.dumps(err).decode("latin-1")):
        assert AWS_TOKEN not in shown
        assert AWS_SECRET not in shown


def test_a_stream_hands_out_text_and_ends_with_usage(
    tmp_path: Path, server: FakeBedrockServer
) -> None:
    server.reply("Hello streamed world", chunks=5, usage={"input_tokens": 10, "output_tokens": 4})
    stream = _project(tmp_path, server).stream("note")
    assert isinstance(stream, RunStream)
    texts = [e.text for e in stream if isinstance(e, TextDelta)]
    result = stream.result()
    assert "".join(texts) == "Hello streamed world"
    assert result.output.text == "Hello streamed world"
    assert server.requests[-1].path.endswith("/converse-stream")
    assert result.usage.output_tokens == 4


def test_a_stream_cut_off_before_its_end_is_a_connection_failure(
    tmp_path: Path, server: FakeBedrockServer
) -> None:
    server.reset_midstream("Hello cut", chunks=3)
    stream = _project(tmp_path, server).stream("note")
    with pytest.raises(LLMGenerateError) as caught:
        list(stream)
    assert caught.value.reason == "connection"
    assert caught.value.partial_text == "Hello cut"


def test_a_tool_stream_cut_by_max_tokens_is_a_length_result(
    tmp_path: Path, server: FakeBedrockServer
) -> None:
    server.reply_tool({"label": "positive"}, stop_reason="max_tokens")
    stream = _project(tmp_path, server).stream("sentiment", inputs={"text": "x"})
    for _ in stream:
        pass
    result = stream.result()
    assert result.attempts[-1].finish_reason == "length"
    assert not result.validation.valid


def test_async_runs_in_a_thread(tmp_path: Path, server: FakeBedrockServer) -> None:
    server.reply("async hello")
    result = asyncio.run(_project(tmp_path, server).arun("note"))
    assert result.output.text == "async hello"


def test_reasoning_goes_to_a_thinking_model(tmp_path: Path, server: FakeBedrockServer) -> None:
    server.reply("answer", thinking="let me think")
    engine = _project(
        tmp_path,
        server,
        model="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        extra="",
    )
    result = engine.run("note", overrides={"reasoning": "low", "max_tokens": 4000})
    assert _sent(server)["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 1024}
    }
    assert result.output.text == "answer"
    assert result.output.reasoning == "let me think"


def test_the_model_tables() -> None:
    assert base_model("us.amazon.nova-pro-v1:0") == "amazon.nova-pro-v1:0"
    assert (
        base_model(
            "arn:aws:bedrock:us-east-1:1:inference-profile/eu.meta.llama3-3-70b-instruct-v1:0"
        )
        == "meta.llama3-3-70b-instruct-v1:0"
    )
    assert takes_tools("us.amazon.nova-lite-v1:0")
    assert not takes_tools("cohere.command-light-text-v14")


def test_check_reports_bad_options(tmp_path: Path, server: FakeBedrockServer) -> None:
    engine = _project(tmp_path, server)
    (tmp_path / "profiles" / "bad.yaml").write_text(
        f"provider: bedrock\nmodel: {NOVA}\noptions: {{region: nowhere, color: red}}\n"
    )
    messages = [p.message for p in engine.check() if "bad" in p.file]
    assert any("options.color" in m for m in messages)
    assert any("options.region" in m for m in messages)


def test_images_and_documents_are_content_blocks(tmp_path: Path, server: FakeBedrockServer) -> None:
    png = bytes.fromhex("89504e470d0a1a0a0000000d494844520000000100000001080600000033")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "look.prompt.md").write_text(
        "---\nprofile: aws\nartifacts:\n  scan: {media_type: image/png}\n---\n"
        "## user\nWhat is it?\n"
    )
    engine = _project(tmp_path, server)
    server.reply("a dot")
    from scriptorium import ArtifactContent

    engine.run("look", artifacts={"scan": ArtifactContent(png, media_type="image/png")})
    content = _sent(server)["messages"][0]["content"]
    image = next(block["image"] for block in content if "image" in block)
    assert image["format"] == "png"
    assert base64.b64decode(image["source"]["bytes"]) == png
    assert json.dumps(content)  # the wire form is JSON (bytes as base64)
