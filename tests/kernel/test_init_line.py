"""The kernel's init line, read as untrusted input: however deep, long or strange, it is run or
refused as a malformed init (an ``error`` log, exit 2), never an internal error or a traceback."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from scriptorium.kernel import EXIT_CONFIG, serve

MOCK_ENV = {
    "CC_LLM_PROVIDER": "mock",
    "CC_LLM_MOCK_RESPONSE_JSON": json.dumps({"text": "ok", "tokens_input": 2}),
}


def _serve(stdin: bytes, env: dict[str, str] = MOCK_ENV) -> tuple[int, list[dict[str, Any]]]:
    out = io.BytesIO()
    code = serve(io.BytesIO(stdin), out, env, pid=7)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def _deep(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


@pytest.mark.parametrize(
    "line",
    [
        _deep(100_000),
        _deep(100_000, '{"a":', "}"),
        '{"op": "init", "payload": ' + _deep(100_000, '{"a":', "}")[:-1] + "}",
        '{"op": "init", "payload": {"model": "m", "user": "u", "metadata": {"x": '
        + _deep(100_000)
        + "}}}",
    ],
    ids=["array", "object", "payload", "metadata"],
)
def test_a_line_nested_100000_deep_is_a_malformed_init(
    line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, messages = _serve(line.encode() + b"\n")
    assert code == EXIT_CONFIG
    assert [m["op"] for m in messages] == ["ready", "log"]
    error = messages[-1]["error"]
    assert (messages[-1]["level"], error["code"]) == ("error", "invalid_request")
    assert "RecursionError" not in json.dumps(messages)
    assert "Traceback" not in capsys.readouterr().err


def test_a_mock_response_nested_too_deeply_is_a_configuration_error() -> None:
    env = {"CC_LLM_PROVIDER": "mock", "CC_LLM_MOCK_RESPONSE_JSON": _deep(100_000)}
    init = json.dumps({"op": "init", "payload": {"model": "m", "user": "u"}}).encode() + b"\n"
    code, messages = _serve(init, env)
    assert code == EXIT_CONFIG
    assert messages[-1]["error"]["reason"] == "config"
