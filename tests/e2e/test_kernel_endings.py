"""How a kernel ends when its supervisor stops it, as real processes: SIGTERM (or SIGINT) at any
moment gives exactly the ending of the kernel's table, never a process killed by the signal,
never a run that goes on to be paid for; and a kernel whose stdout is gone makes no paid call.

The moments: while the SDK is being imported (a stand-in SDK that takes seconds to import, many
small imports, so an interruption raised there would land inside the import machinery), while the
call is in flight (the real SDK against a slow loopback server), with a second signal on the heels
of the first, and with stdout closed before ``ready``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scriptorium.testing import FakeAnthropicServer
from tests.e2e.test_kernel import KERNEL, REPO, init_line, kernel_env

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

KEY = "sk-ant-kernel-endings-canary-9d2c"
RAW = {"model": "claude-sonnet-4-6", "user": "Summarize the plan."}
#: How long the stand-in SDK takes to import.
IMPORT_S = 6.0


@pytest.fixture
def slow_sdk(tmp_path: Path) -> Path:
    """A directory whose ``anthropic`` package takes :data:`IMPORT_S` to import, made of many
    imports one after another (each takes and drops a module lock)."""
    package = tmp_path / "slow_sdk" / "anthropic"
    package.mkdir(parents=True)
    for n in range(50):
        (package / f"part_{n}.py").write_text(f"VALUE = {n}\n", encoding="utf-8")
    (package / "__init__.py").write_text(
        "import importlib, sys, time\n"
        f"deadline = time.monotonic() + {IMPORT_S}\n"
        "n = 0\n"
        "while time.monotonic() < deadline:\n"
        "    name = f'anthropic.part_{n % 50}'\n"
        "    sys.modules.pop(name, None)\n"
        "    importlib.import_module(name)\n"
        "    n += 1\n"
        "raise ImportError('the stand-in SDK is only slow')\n",
        encoding="utf-8",
    )
    return package.parent


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


def _spawn(env: dict[str, str], **kwargs: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        KERNEL,
        stdin=subprocess.PIPE,
        stdout=kwargs.pop("stdout", subprocess.PIPE),
        stderr=subprocess.PIPE,
        env=env,
        cwd=REPO,
        **kwargs,
    )


def _ready(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert proc.stdout is not None
    ready: dict[str, Any] = json.loads(proc.stdout.readline())
    assert ready == {"op": "ready", "pid": proc.pid}
    return ready


def _send_init(proc: subprocess.Popen[bytes], payload: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(init_line(payload))
    proc.stdin.close()


def _finish(proc: subprocess.Popen[bytes]) -> tuple[list[dict[str, Any]], int, str]:
    """What the kernel wrote after ``ready``, its exit code and its stderr."""
    assert proc.stdout is not None
    assert proc.stderr is not None
    with proc.stdout, proc.stderr:
        out, err = proc.stdout.read(), proc.stderr.read()
    code = proc.wait(timeout=60)
    lines = [json.loads(line) for line in out.decode("ascii").splitlines()]
    return lines, code, err.decode()


def _anthropic_env(url: str, **extra: str) -> dict[str, str]:
    return kernel_env(
        CC_LLM_PROVIDER="anthropic", ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=url, **extra
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_while_the_sdk_imports_refuses_the_run_at_once(
    slow_sdk: Path, server: FakeAnthropicServer, signum: int
) -> None:
    """Before the iteration: one error log (cancelled), exit 2, no exit line, nothing sent; and
    the process ends at once, not when the import would have finished."""
    env = _anthropic_env(server.url)
    env["PYTHONPATH"] = f"{slow_sdk}{os.pathsep}{env['PYTHONPATH']}"
    proc = _spawn(env)
    _ready(proc)
    _send_init(proc, RAW)
    time.sleep(1.0)  # well inside the stand-in SDK's import
    stopped = time.monotonic()
    proc.send_signal(signum)
    lines, code, err = _finish(proc)
    assert time.monotonic() - stopped < IMPORT_S / 2, "the kernel waited for the import"
    assert code == 2, err
    assert [m["op"] for m in lines] == ["log"]
    assert (lines[0]["level"], lines[0]["error"]["reason"]) == ("error", "cancelled")
    assert server.requests == []
    assert "Traceback" not in err


def test_a_stop_during_the_call_is_a_cancelled_failed_exit(server: FakeAnthropicServer) -> None:
    """Once the iteration started: error log, ``exit failed`` (cancelled), exit 1, at once (the
    slow answer is not waited for), and a second signal changes nothing."""
    server.delay(30.0, "never read")
    proc = _spawn(_anthropic_env(server.url))
    _ready(proc)
    _send_init(proc, RAW)
    deadline = time.monotonic() + 60
    while server.pending and time.monotonic() < deadline:  # the request reached the provider
        time.sleep(0.02)
    assert server.pending == 0, "the call was never made"
    stopped = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGINT)  # an impatient supervisor
    lines, code, err = _finish(proc)
    assert time.monotonic() - stopped < 10, "the kernel waited for the answer"
    assert code == 1, err
    assert [m["op"] for m in lines] == ["iteration_start", "log", "log", "exit"]
    assert lines[-1]["exit_kind"] == "failed"
    assert lines[-1]["error"]["reason"] == "cancelled"
    assert KEY not in json.dumps(lines) + err


def test_a_stop_before_init_is_read_is_a_refusal(server: FakeAnthropicServer) -> None:
    proc = _spawn(_anthropic_env(server.url))
    _ready(proc)
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGTERM)
    lines, code, _ = _finish(proc)
    assert proc.stdin is not None
    proc.stdin.close()
    assert code == 2
    assert [m["op"] for m in lines] == ["log"]
    assert lines[0]["error"]["reason"] == "cancelled"


def test_stdout_closed_before_ready_makes_no_paid_call(server: FakeAnthropicServer) -> None:
    """Nobody can read the answer, the charges or the exit line: nothing is sent (exit 2)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the supervisor is gone before the kernel says a word
    try:
        proc = _spawn(_anthropic_env(server.url), stdout=write_end)
    finally:
        os.close(write_end)
    _, err = proc.communicate(init_line(RAW), timeout=60)
    assert proc.returncode == 2, err
    time.sleep(0.2)
    assert server.requests == []


@pytest.mark.parametrize("delay_s", [0.0, 0.005, 0.02, 0.05, 0.1, 0.3])
def test_a_stop_at_any_moment_of_start_up_ends_by_the_table(delay_s: float) -> None:
    """Before the interpreter has run the kernel's first line, the operating system's default
    applies (killed, no line: the supervisor saw no ``ready``, nothing ran); from then on the
    stop is recorded, ``ready`` still comes first, and the run is refused (error log, exit 2)."""
    env = kernel_env(CC_LLM_PROVIDER="mock", CC_LLM_MOCK_RESPONSE_JSON='{"text": "x"}')
    proc = _spawn(env)
    time.sleep(delay_s)
    proc.send_signal(signal.SIGTERM)
    lines, code, err = _finish(proc)
    assert proc.stdin is not None
    proc.stdin.close()
    if code == -signal.SIGTERM:
        assert lines == [], "killed by the signal after writing"
        return
    assert code == 2, (code, lines, err)
    assert [m["op"] for m in lines] == ["ready", "log"]
    assert lines[1]["error"]["reason"] == "cancelled"
    assert "Traceback" not in err
