"""The kernel's key: the supervisor's environment holding a blank key is a missing key (exit 2,
nothing sent), for raw and prompt-run payloads alike; a short one is a key as given."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from scriptorium.kernel import EXIT_CONFIG, serve

RAW = {"model": "claude-sonnet-4-6", "user": "hello"}
PROMPT = {"prompt_id": "greet", "inputs": {"name": "Ada"}}


@pytest.mark.parametrize("payload", [RAW, PROMPT], ids=["raw", "prompt"])
@pytest.mark.parametrize("value", ["", "  \t"])
def test_a_blank_key_variable_is_a_missing_key(payload: dict[str, Any], value: str) -> None:
    env = {"CC_LLM_PROVIDER": "anthropic", "ANTHROPIC_API_KEY": value}
    out = io.BytesIO()
    stdin = json.dumps({"op": "init", "payload": payload}).encode() + b"\n"
    code = serve(io.BytesIO(stdin), out, env, pid=1)
    messages = [json.loads(line) for line in out.getvalue().splitlines()]
    assert code == EXIT_CONFIG
    assert [m["op"] for m in messages] == ["ready", "log"]
    error = messages[-1]["error"]
    assert (error["code"], error["env_var"]) == ("api_key_env_missing", "ANTHROPIC_API_KEY")
    if value.strip():
        assert value not in out.getvalue().decode()
