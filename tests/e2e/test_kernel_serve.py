"""The kernel's ``serve`` in-process: the failure table's rows that need a misbehaving provider,
and properties over arbitrary input (cheap here, where a subprocess per example would not be)."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.errors import LLMGenerateError
from scriptorium.kernel import EXIT_COMPLETED, EXIT_CONFIG, EXIT_FAILED, serve
from scriptorium.llm.client import Client
from scriptorium.llm.model import LLMResponse, Usage
from scriptorium.testing import FakeClient

MOCK_ENV = {
    "CC_LLM_PROVIDER": "mock",
    "CC_LLM_MOCK_RESPONSE_JSON": json.dumps({"text": "ok", "tokens_input": 2, "cost_micro": 3}),
}
RAW = {"model": "m-1", "user": "hello"}
KEY = "sk-ant-serve-test-abcdef123456"


def _serve(
    stdin: bytes, env: Mapping[str, str] = MOCK_ENV, client: Client | None = None
) -> tuple[int, list[dict[str, Any]]]:
    out = io.BytesIO()
    code = serve(io.BytesIO(stdin), out, env, pid=4242, client=client)
    lines = out.getvalue().decode("ascii").splitlines()
    return code, [json.loads(line) for line in lines]


def _init(payload: Mapping[str, Any]) -> bytes:
    return json.dumps({"op": "init", "payload": payload}).encode() + b"\n"


def _ops(messages: list[dict[str, Any]]) -> list[str]:
    return [m["op"] for m in messages]


# --- provider failures during the call -----------------------------------------------------------


def test_a_provider_error_during_the_call_is_a_failed_exit_with_code_1() -> None:
    """A rate limit from the client: error log, exit failed with the error's fields, no charge."""
    failure = LLMGenerateError("slow down", reason="rate_limited", retryable=True, http_status=429)
    code, messages = _serve(_init(RAW), client=FakeClient([failure]))
    assert code == EXIT_FAILED
    assert _ops(messages) == ["ready", "iteration_start", "log", "log", "exit"]
    assert messages[-1]["exit_kind"] == "failed"
    assert messages[-1]["error"]["reason"] == "rate_limited"
    assert messages[-1]["error"]["http_status"] == 429
    assert messages[-1]["error"]["retryable"] is True


def test_a_foreign_exception_from_the_client_is_translated_and_scrubbed() -> None:
    """A RuntimeError carrying a key becomes llm_generate/server_error with the key redacted."""
    env = {"ANTHROPIC_API_KEY": KEY}
    code, messages = _serve(_init(RAW), env, FakeClient([RuntimeError(f"boom {KEY}")]))
    assert code == EXIT_FAILED
    error = messages[-1]["error"]
    assert (error["code"], error["reason"]) == ("llm_generate", "server_error")
    assert KEY not in json.dumps(messages)
    assert "[redacted]" in error["message"]


def test_an_interrupt_during_the_call_ends_with_a_cancelled_failed_exit() -> None:
    """SIGINT (and SIGTERM, which the kernel maps to it) mid-call still writes an exit line."""
    code, messages = _serve(_init(RAW), client=FakeClient([KeyboardInterrupt()]))
    assert code == EXIT_FAILED
    assert messages[-1]["exit_kind"] == "failed"
    assert messages[-1]["error"]["reason"] == "cancelled"


def test_a_configuration_error_raised_by_the_client_exits_2() -> None:
    """reason=config (or provider_unavailable) from the call means misconfigured: code 2."""
    failure = LLMGenerateError("unknown provider", reason="config")
    code, messages = _serve(_init(RAW), client=FakeClient([failure]))
    assert code == EXIT_CONFIG
    assert "exit" not in _ops(messages)
    assert messages[-1]["level"] == "error"


def test_an_injected_client_serves_raw_payloads_with_its_usage_charged() -> None:
    """``serve(client=...)`` replaces CC_LLM_PROVIDER; the charges are the response's usage."""
    usage = Usage(input_tokens=5, output_tokens=6, cache_creation_input_tokens=1, cost_micro=9)
    client = FakeClient([LLMResponse(text="fine", usage=usage)])
    code, messages = _serve(_init(RAW), {}, client)
    assert code == EXIT_COMPLETED
    charges = [(m["dim"], m["amount"]) for m in messages if m["op"] == "charge"]
    assert charges == [("tokens", 12), ("cost_micro", 9)]
    assert client.requests[0].settings.max_tokens == 1024
    assert client.requests[0].settings.temperature == 0.7


def test_an_invalid_prompt_output_completes_with_a_warning_log(tmp_path: Path) -> None:
    """Output failing its json contract is the run's verdict, not a failure: a warning line."""
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "classify.prompt.md").write_text(
        "---\nprofile: offline\noutput: {format: json}\n---\nClassify {{ text }}.\n",
        encoding="utf-8",
    )
    (tmp_path / "profiles" / "offline.yaml").write_text(
        "provider: fake\nmodel: fake-1\noptions: {responses: ['x']}\n", encoding="utf-8"
    )
    payload = {"prompt_id": "classify", "inputs": {"text": "a"}, "root": str(tmp_path)}
    code, messages = _serve(_init(payload), {}, FakeClient(["not json at all"]))
    assert code == EXIT_COMPLETED
    assert _ops(messages)[-4:] == ["log", "iteration_done", "result", "exit"]
    assert messages[-4]["level"] == "warning"
    assert messages[-2]["result"]["validation"]["valid"] is False
    assert messages[-1]["summary"] == "not json at all"


# --- properties ----------------------------------------------------------------------------------


def _check_transcript(code: int, messages: list[dict[str, Any]]) -> None:
    assert messages[0] == {"op": "ready", "pid": 4242}
    if code == EXIT_CONFIG:
        assert "exit" not in _ops(messages)
        assert messages[-1]["op"] == "log"
        assert messages[-1]["level"] == "error"
    else:
        assert code == EXIT_COMPLETED
        assert messages[-1]["op"] == "exit"
        assert messages[-1]["exit_kind"] == "completed"


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=200))
def test_any_stdin_ends_cleanly_with_protocol_lines_only(stdin: bytes) -> None:
    """Whatever arrives on stdin, the kernel writes JSON lines and exits 0 or 2, never raising."""
    code, messages = _serve(stdin)
    _check_transcript(code, messages)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)
_keys = st.sampled_from(
    ["model", "user", "system", "max_tokens", "temperature", "metadata", "prompt_id", "inputs"]
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_keys | st.text(max_size=8), _json, max_size=5))
def test_any_payload_is_run_or_refused_with_an_error_log(payload: dict[str, Any]) -> None:
    """A payload of any shape either completes (mock) or is refused with code 2."""
    code, messages = _serve(_init(payload))
    _check_transcript(code, messages)
