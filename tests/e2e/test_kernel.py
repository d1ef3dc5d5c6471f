"""``python -m scriptorium.kernel`` driven as a supervisor drives it: a real subprocess, one init
line in, JSON lines out, a ledger charged from what comes back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
KERNEL = [sys.executable, "-m", "scriptorium.kernel"]
# The anthropic SDK made unimportable before the kernel runs (as if it were not installed).
KERNEL_WITHOUT_SDK = [
    sys.executable,
    "-c",
    "import runpy, sys; sys.modules['anthropic'] = None; "
    "runpy.run_module('scriptorium.kernel', run_name='__main__', alter_sys=True)",
]
TIMEOUT_S = 60

MOCK = {
    "text": "The board should approve the budget.",
    "tokens_input": 20,
    "tokens_output": 10,
    "cost_micro": 250,
    "model": "mock-model-1",
    "finish_reason": "stop",
    "metadata": {"source": "test"},
}
RAW = {"model": "claude-sonnet-4-6", "system": "Be brief.", "user": "Summarize the plan."}


def kernel_env(**extra: str) -> dict[str, str]:
    """A minimal environment: nothing inherited but what the interpreter needs."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO)}
    if "SYSTEMROOT" in os.environ:  # Windows cannot start Python without it
        env["SYSTEMROOT"] = os.environ["SYSTEMROOT"]
    env.update(extra)
    return env


def mock_env(response: Mapping[str, Any] = MOCK) -> dict[str, str]:
    return kernel_env(CC_LLM_PROVIDER="mock", CC_LLM_MOCK_RESPONSE_JSON=json.dumps(response))


def init_line(payload: Mapping[str, Any]) -> bytes:
    return json.dumps({"op": "init", "payload": payload}).encode() + b"\n"


@dataclass
class Finished:
    """What a kernel wrote and how it ended."""

    messages: list[dict[str, Any]]
    returncode: int
    pid: int
    stderr: str

    @property
    def ops(self) -> list[str]:
        return [m["op"] for m in self.messages]

    def errors(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["op"] == "log" and m["level"] == "error"]


def run_kernel(
    env: Mapping[str, str],
    stdin: bytes,
    *,
    cwd: Path = REPO,
    argv: list[str] = KERNEL,
) -> Finished:
    """Run a kernel to the end with ``stdin`` as its whole input; every stdout line must be JSON."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
    )
    out, err = proc.communicate(stdin, timeout=TIMEOUT_S)
    lines = out.decode("ascii").splitlines()
    messages = [json.loads(line) for line in lines]
    assert all(isinstance(m, dict) and "op" in m for m in messages), lines
    return Finished(messages, proc.returncode, proc.pid, err.decode())


@dataclass
class Ledger:
    """A supervisor's ledger: charged from ``charge`` lines *and* from ``iteration_done``."""

    totals: dict[str, int] = field(default_factory=lambda: {"tokens": 0, "cost_micro": 0})
    lock: threading.Lock = field(default_factory=threading.Lock)

    def charge(self, dim: str, amount: int) -> None:
        with self.lock:
            self.totals[dim] += amount


def supervise(env: Mapping[str, str], payload: Mapping[str, Any], ledger: Ledger) -> Finished:
    """Spawn a kernel, wait for ``ready``, send init, and charge the ledger line by line."""
    with subprocess.Popen(
        KERNEL,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=REPO,
    ) as proc:
        assert proc.stdin is not None
        assert proc.stdout is not None
        assert proc.stderr is not None
        ready = json.loads(proc.stdout.readline())
        assert ready == {"op": "ready", "pid": proc.pid}
        proc.stdin.write(init_line(payload))
        proc.stdin.close()
        messages = [ready]
        for line in proc.stdout:
            message = json.loads(line)
            messages.append(message)
            if message["op"] == "charge":
                ledger.charge(message["dim"], message["amount"])
            elif message["op"] == "iteration_done":
                ledger.charge("tokens", message["tokens"])
                ledger.charge("cost_micro", message["cost_micro"])
        stderr = proc.stderr.read().decode()
        returncode = proc.wait(timeout=TIMEOUT_S)
    return Finished(messages, returncode, proc.pid, stderr)


# --- the happy path ------------------------------------------------------------------------------


def test_a_mock_run_writes_exactly_the_protocol_sequence() -> None:
    """ready, iteration_start, calling log, two charges, zeroed iteration_done, completed exit."""
    done = run_kernel(mock_env(), init_line(RAW))
    assert done.returncode == 0, done.stderr
    assert done.messages == [
        {"op": "ready", "pid": done.pid},
        {"op": "iteration_start", "iter": 1},
        {"op": "log", "level": "info", "msg": "calling claude-sonnet-4-6"},
        {"op": "charge", "dim": "tokens", "amount": 30},
        {"op": "charge", "dim": "cost_micro", "amount": 250},
        {"op": "iteration_done", "iter": 1, "tokens": 0, "cost_micro": 0},
        {"op": "exit", "exit_kind": "completed", "summary": MOCK["text"]},
    ]


def test_the_summary_is_the_text_cut_to_200_characters() -> None:
    """A long (non-ASCII) output is cut to its first 200 characters, not bytes."""
    text = "é" * 150 + "x" * 150
    done = run_kernel(mock_env({**MOCK, "text": text}), init_line(RAW))
    assert done.returncode == 0, done.stderr
    assert done.messages[-1] == {"op": "exit", "exit_kind": "completed", "summary": text[:200]}


def test_a_supervisor_charging_from_charges_and_iteration_done_counts_once() -> None:
    """iteration_done carries zeros, so the ledger holds exactly the mock's usage."""
    ledger = Ledger()
    done = supervise(mock_env(), RAW, ledger)
    assert done.returncode == 0, done.stderr
    assert done.ops.count("charge") == 2
    assert ledger.totals == {"tokens": 30, "cost_micro": 250}


def test_a_worker_pool_of_kernels_charges_the_sum_of_every_run() -> None:
    """Six kernels at once, each with its own usage: the shared ledger ends at the exact sum."""
    ledger = Ledger()
    usages = [(10 * i, i, 100 * i + 7) for i in range(1, 7)]

    def one(usage: tuple[int, int, int]) -> Finished:
        tokens_in, tokens_out, cost = usage
        env = mock_env(
            {**MOCK, "tokens_input": tokens_in, "tokens_output": tokens_out, "cost_micro": cost}
        )
        return supervise(env, RAW, ledger)

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(one, usages))
    assert [r.returncode for r in results] == [0] * 6
    assert len({r.pid for r in results}) == 6
    assert ledger.totals == {
        "tokens": sum(i + o for i, o, _ in usages),
        "cost_micro": sum(c for _, _, c in usages),
    }


def test_raw_payload_defaults_and_metadata_are_accepted() -> None:
    """max_tokens, temperature and metadata are optional; explicit values pass validation."""
    payload = {**RAW, "max_tokens": 64, "temperature": 0.0, "metadata": {"job": "7"}}
    done = run_kernel(mock_env(), init_line(payload))
    assert done.returncode == 0, done.stderr
    assert done.ops[-1] == "exit"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_while_waiting_for_init_ends_cleanly_with_code_2() -> None:
    """A supervisor stopping an idle worker gets an error log (cancelled), no traceback."""
    with subprocess.Popen(
        KERNEL,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=mock_env(),
        cwd=REPO,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        assert json.loads(proc.stdout.readline())["op"] == "ready"
        proc.send_signal(signal.SIGTERM)
        rest = [json.loads(line) for line in proc.stdout]
        stderr = proc.stderr.read().decode()
        assert proc.wait(timeout=TIMEOUT_S) == 2
    assert [m["op"] for m in rest] == ["log"]
    assert rest[0]["error"]["reason"] == "cancelled"
    assert "Traceback" not in stderr


# Noise from "a library" once the kernel runs: a print and a raw write to file descriptor 1.
NOISY_KERNEL = [
    sys.executable,
    "-c",
    "import os, runpy, scriptorium.kernel.worker as worker\n"
    "serve = worker.serve\n"
    "def noisy(*args, **kwargs):\n"
    "    print('stray print', flush=True)\n"
    "    os.write(1, b'stray write\\n')\n"
    "    return serve(*args, **kwargs)\n"
    "worker.serve = noisy\n"
    "runpy.run_module('scriptorium.kernel', run_name='__main__', alter_sys=True)\n",
]


def test_stray_output_goes_to_stderr_and_never_corrupts_stdout() -> None:
    """print() and raw writes to fd 1 land on stderr; stdout holds only protocol lines."""
    done = run_kernel(mock_env(), init_line(RAW), argv=NOISY_KERNEL)
    assert done.returncode == 0, done.stderr
    assert done.ops[0] == "ready"
    assert done.ops[-1] == "exit"
    assert "stray print" in done.stderr
    assert "stray write" in done.stderr


def test_importing_the_kernel_package_stays_light() -> None:
    """``import scriptorium.kernel`` loads no pydantic, Engine, Jinja, jsonschema or SDK."""
    heavy = ["pydantic", "scriptorium.engine", "jinja2", "jsonschema", "anthropic", "openai"]
    code = (
        "import json, sys, scriptorium.kernel\n"
        f"print(json.dumps([m for m in {heavy!r} if m in sys.modules]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        env=kernel_env(),
        cwd=REPO,
        timeout=TIMEOUT_S,
        check=True,
    )
    assert json.loads(proc.stdout) == []


# --- prompt runs ---------------------------------------------------------------------------------


GREET = """---
profile: offline
inputs:
  type: object
  required: [name]
  properties: {name: {type: string}}
---
## system
You greet people.

## user
Hello {{ name }}!
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with one prompt and a ``fake``-provider profile."""
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "greet.prompt.md").write_text(GREET, encoding="utf-8")
    (tmp_path / "profiles" / "offline.yaml").write_text(
        "provider: fake\nmodel: fake-1\noptions: {responses: ['Hi Ada, welcome.']}\n",
        encoding="utf-8",
    )
    return tmp_path


def test_a_prompt_run_with_the_profile_provider_goes_through_the_engine(project: Path) -> None:
    """CC_LLM_PROVIDER=profile: the prompt's profile (fake) answers; charges are its usage."""
    payload = {"prompt_id": "greet", "inputs": {"name": "Ada"}, "root": str(project)}
    ledger = Ledger()
    done = supervise(kernel_env(CC_LLM_PROVIDER="profile"), payload, ledger)
    assert done.returncode == 0, done.stderr
    assert done.ops == [
        "ready",
        "iteration_start",
        "log",
        "charge",
        "charge",
        "iteration_done",
        "result",
        "exit",
    ]
    assert done.messages[2] == {"op": "log", "level": "info", "msg": "calling fake-1"}
    assert done.messages[-1]["summary"] == "Hi Ada, welcome."
    result = done.messages[-2]["result"]
    assert result["output"]["text"] == "Hi Ada, welcome."
    assert result["prepared"]["prompt_id"] == "greet"
    # The fake provider estimates a token per four characters of prompt and answer; cost 0.
    assert ledger.totals["tokens"] > 0
    assert ledger.totals["cost_micro"] == 0


def test_a_prompt_run_with_the_mock_provider_charges_the_mock_usage(project: Path) -> None:
    """CC_LLM_PROVIDER=mock replaces the profile's client; root defaults to the working dir."""
    payload = {"prompt_id": "greet", "inputs": {"name": "Ada"}}
    done = run_kernel(mock_env(), init_line(payload), cwd=project)
    assert done.returncode == 0, done.stderr
    result = done.messages[-2]
    assert result["op"] == "result"
    assert result["result"]["output"]["text"] == MOCK["text"]
    assert done.messages[1:-2] + done.messages[-1:] == [
        {"op": "iteration_start", "iter": 1},
        {"op": "log", "level": "info", "msg": "calling fake-1"},
        {"op": "charge", "dim": "tokens", "amount": 30},
        {"op": "charge", "dim": "cost_micro", "amount": 250},
        {"op": "iteration_done", "iter": 1, "tokens": 0, "cost_micro": 0},
        {"op": "exit", "exit_kind": "completed", "summary": MOCK["text"]},
    ]


def test_a_prompt_run_that_cannot_be_prepared_exits_2_without_an_exit_line(
    project: Path,
) -> None:
    """Inputs failing the prompt's schema: nothing is called, an error log, exit code 2."""
    payload = {"prompt_id": "greet", "inputs": {}, "root": str(project)}
    done = run_kernel(kernel_env(CC_LLM_PROVIDER="profile"), init_line(payload))
    assert done.returncode == 2
    assert "exit" not in done.ops
    assert "charge" not in done.ops
    assert done.errors()[0]["error"]["code"] == "invalid_request"


# --- the anthropic SDK made unimportable ---------------------------------------------------------


def test_the_mock_path_never_needs_the_anthropic_sdk() -> None:
    """With ``anthropic`` blocked in sys.modules, a mock run completes as usual."""
    done = run_kernel(mock_env(), init_line(RAW), argv=KERNEL_WITHOUT_SDK)
    assert done.returncode == 0, done.stderr
    assert done.ops[-1] == "exit"
    assert done.messages[-1]["exit_kind"] == "completed"


def test_choosing_anthropic_without_the_sdk_exits_2_provider_unavailable() -> None:
    """The missing SDK is a configuration problem: an error log naming the reason, exit 2."""
    env = kernel_env(CC_LLM_PROVIDER="anthropic", ANTHROPIC_API_KEY="sk-ant-test-not-a-key")
    done = run_kernel(env, init_line(RAW), argv=KERNEL_WITHOUT_SDK)
    assert done.returncode == 2
    assert "exit" not in done.ops
    (error,) = done.errors()
    assert "provider_unavailable" in error["msg"]
    assert error["error"]["reason"] == "provider_unavailable"
    assert "sk-ant-test-not-a-key" not in json.dumps(done.messages) + done.stderr


# --- configuration failures: an error log, exit 2, no exit line ----------------------------------


CONFIG_FAILURES: dict[str, tuple[dict[str, str], bytes, str]] = {
    "provider unset": (kernel_env(), init_line(RAW), "llm_generate"),
    "provider unknown": (kernel_env(CC_LLM_PROVIDER="openai-ish"), init_line(RAW), "llm_generate"),
    "profile provider for a raw payload": (
        kernel_env(CC_LLM_PROVIDER="profile"),
        init_line(RAW),
        "llm_generate",
    ),
    "mock without its response": (
        kernel_env(CC_LLM_PROVIDER="mock"),
        init_line(RAW),
        "llm_generate",
    ),
    "mock response not an object": (
        kernel_env(CC_LLM_PROVIDER="mock", CC_LLM_MOCK_RESPONSE_JSON="[1, 2]"),
        init_line(RAW),
        "llm_generate",
    ),
    "raw payload without model": (
        mock_env(),
        init_line({"user": "hi"}),
        "invalid_request",
    ),
    "raw payload without user": (
        mock_env(),
        init_line({"model": "m"}),
        "invalid_request",
    ),
    "prompt run without prompt_id": (
        mock_env(),
        init_line({"inputs": {"a": 1}}),
        "invalid_request",
    ),
    "malformed init line": (mock_env(), b"{not json\n", "invalid_request"),
    "unknown op": (mock_env(), b'{"op": "start", "payload": {}}\n', "invalid_request"),
    "EOF before init": (mock_env(), b"", "invalid_request"),
    "anthropic without a key": (
        kernel_env(CC_LLM_PROVIDER="anthropic"),
        init_line(RAW),
        "api_key_env_missing",
    ),
}


@pytest.mark.parametrize("case", sorted(CONFIG_FAILURES))
def test_a_configuration_failure_exits_2_with_an_error_log_and_no_exit_line(case: str) -> None:
    """Each row of the failure table that is not the call's fault: ready, error log, code 2."""
    env, stdin, code = CONFIG_FAILURES[case]
    done = run_kernel(env, stdin)
    assert done.returncode == 2, done.stderr
    assert done.ops == ["ready", "log"]
    (error,) = done.errors()
    assert error["error"]["code"] == code
    assert "Traceback" not in done.stderr
