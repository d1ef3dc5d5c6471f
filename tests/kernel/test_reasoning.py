"""The kernel payload's ``reasoning`` and ``reasoning_budget_tokens``: sent on the wire for raw and
prompt-run payloads (through the real SDK against FakeAnthropicServer), said once, and a conflict
refused before any call."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scriptorium.errors import InvalidRequestError
from scriptorium.kernel import EXIT_CONFIG, serve
from scriptorium.kernel.payload import PromptPayload, parse_payload
from scriptorium.testing import FakeAnthropicServer

KEY = "sk-ant-kernel-reasoning-canary-4411"


@pytest.fixture(scope="module")
def shared() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(default_text=None) as server:
        yield server


@pytest.fixture
def server(shared: FakeAnthropicServer) -> FakeAnthropicServer:
    shared.reset()
    return shared


def _serve(
    server: FakeAnthropicServer, payload: dict[str, Any]
) -> tuple[int, list[dict[str, Any]]]:
    env = {
        "CC_LLM_PROVIDER": "anthropic",
        "ANTHROPIC_API_KEY": KEY,
        "ANTHROPIC_BASE_URL": server.url,
    }
    out = io.BytesIO()
    stdin = json.dumps({"op": "init", "payload": payload}).encode() + b"\n"
    code = serve(io.BytesIO(stdin), out, env, pid=1)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def _project(root: Path) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "greet.prompt.md").write_text(
        "---\nprofile: claude\n---\nGreet {{ name }}.\n", encoding="utf-8"
    )
    (root / "profiles" / "claude.yaml").write_text(
        "provider: anthropic\nmodel: claude-sonnet-4-5\napi_key_env: ANTHROPIC_API_KEY\n"
        "settings: {max_tokens: 8000}\n",
        encoding="utf-8",
    )
    return root


def test_a_raw_payload_sends_its_reasoning(server: FakeAnthropicServer) -> None:
    server.reply(
        "Hello.", thinking="Hm.", thinking_tokens=3, usage={"input_tokens": 5, "output_tokens": 9}
    )
    payload = {"model": "claude-opus-4-7", "user": "hi", "reasoning": "high", "max_tokens": 4000}
    code, messages = _serve(server, payload)
    assert code == 0, messages
    body = server.requests[0].body
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "high"}
    assert messages[-1]["summary"] == "Hello."


def test_a_prompt_payload_takes_reasoning_at_the_top_or_in_overrides(
    server: FakeAnthropicServer, tmp_path: Path
) -> None:
    root = str(_project(tmp_path))
    for payload in (
        {"prompt_id": "greet", "inputs": {"name": "Ada"}, "root": root, "reasoning": "medium"},
        {
            "prompt_id": "greet",
            "inputs": {"name": "Ada"},
            "root": root,
            "overrides": {"reasoning": "medium"},
        },
    ):
        server.reset()
        server.reply("Hello, Ada.")
        code, messages = _serve(server, payload)
        assert code == 0, messages
        # Sonnet 4.5 takes a thinking budget: medium stands for 4096 tokens.
        assert server.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 4096}


def test_a_budget_given_in_both_places_is_refused() -> None:
    payload = parse_payload(
        {
            "prompt_id": "greet",
            "reasoning_budget_tokens": 2000,
            "overrides": {"reasoning_budget_tokens": 3000},
        }
    )
    assert isinstance(payload, PromptPayload)
    with pytest.raises(InvalidRequestError, match="say it once"):
        payload.all_overrides()


def test_a_conflict_is_refused_before_any_call(server: FakeAnthropicServer, tmp_path: Path) -> None:
    root = str(_project(tmp_path))
    payload = {
        "prompt_id": "greet",
        "inputs": {"name": "Ada"},
        "root": root,
        "reasoning_budget_tokens": 9000,
    }
    code, messages = _serve(server, payload)
    assert code == EXIT_CONFIG, messages
    assert server.requests == []
    error = messages[-1]["error"]
    assert error["code"] == "invalid_request"
    assert "max_tokens" in error["message"]
