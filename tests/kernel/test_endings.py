"""The kernel's endings when a stop comes, decided in one place: ``serve`` with a :class:`Stop`
asked to stop at each moment of a run (before it starts, during the call, after the answer came
back, while the ending is written), and a supervisor that stops reading. Exactly one ending, the
one the kernel's table gives for that moment, and no model call once nobody can be told."""

from __future__ import annotations

import io
import json
import os
import signal
import threading
import time
from typing import Any

import pytest

from scriptorium.kernel import EXIT_COMPLETED, EXIT_CONFIG, EXIT_FAILED, serve
from scriptorium.kernel.signals import Stop, install
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.testing import FakeClient

ENV = {"CC_LLM_PROVIDER": "mock", "CC_LLM_MOCK_RESPONSE_JSON": "{}"}
INIT = json.dumps({"op": "init", "payload": {"model": "m-1", "user": "hi"}}).encode() + b"\n"
ANSWER = LLMResponse(text="done", model="m-1", usage=Usage(input_tokens=7, output_tokens=3))


def _lines(out: io.BytesIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _ops(out: io.BytesIO) -> list[str]:
    return [m["op"] for m in _lines(out)]


def test_a_stop_before_the_run_starts_is_a_refusal_and_calls_nothing() -> None:
    stop = Stop()
    stop.request(signal.SIGTERM)
    client = FakeClient([ANSWER])
    out = io.BytesIO()
    assert serve(io.BytesIO(INIT), out, ENV, pid=1, client=client, stop=stop) == EXIT_CONFIG
    assert _ops(out) == ["ready", "log"]
    assert _lines(out)[-1]["error"]["reason"] == "cancelled"
    assert "SIGTERM" in _lines(out)[-1]["msg"]
    assert client.calls == 0


def test_a_stop_during_the_call_ends_the_run_at_once_and_nothing_follows() -> None:
    """``exit failed`` (cancelled), code 1, returned while the call still hangs; when the call
    does come back later, nothing more is written: the ending was the last line."""
    stop, called, release = Stop(), threading.Event(), threading.Event()

    def hang(request: LLMRequest) -> LLMResponse:
        called.set()
        release.wait(10)
        return ANSWER

    out = io.BytesIO()
    done: list[int] = []
    runner = threading.Thread(
        target=lambda: done.append(
            serve(io.BytesIO(INIT), out, ENV, pid=1, client=FakeClient([hang]), stop=stop)
        )
    )
    runner.start()
    assert called.wait(10)
    stop.request(signal.SIGTERM)
    runner.join(10)
    assert done == [EXIT_FAILED]
    assert stop.abandoned
    before = out.getvalue()
    release.set()
    time.sleep(0.2)  # the abandoned work finishes: it must write nothing
    assert out.getvalue() == before
    assert _ops(out) == ["ready", "iteration_start", "log", "log", "exit"]
    assert _lines(out)[-1]["error"]["reason"] == "cancelled"


def test_a_stop_after_the_answer_came_back_still_charges_it() -> None:
    """Whichever ending wins the race, it is one of the table's, and a paid answer is charged."""
    for _ in range(20):
        stop = Stop()

        def answer(request: LLMRequest, stop: Stop = stop) -> LLMResponse:
            stop.request(signal.SIGTERM)
            return ANSWER

        out = io.BytesIO()
        code = serve(io.BytesIO(INIT), out, ENV, pid=1, client=FakeClient([answer]), stop=stop)
        ops = _ops(out)
        assert ops.count("exit") == 1
        assert code in (EXIT_COMPLETED, EXIT_FAILED)
        charges = [m["amount"] for m in _lines(out) if m["op"] == "charge"]
        assert charges[0] == 10, ops
        assert ops[-1] == "exit"


class _StopsAtTheEnding(io.BytesIO):
    """A stdout on which a stop arrives while the ending is being written."""

    def __init__(self, stop: Stop) -> None:
        super().__init__()
        self.stop = stop

    def write(self, data: Any) -> int:
        written = super().write(data)
        if b'"iteration_done"' in bytes(data):
            self.stop.request(signal.SIGTERM)
            time.sleep(0.2)  # the waiting thread sees the stop now, mid-ending
        return written


def test_a_stop_while_the_ending_is_written_changes_nothing() -> None:
    stop = Stop()
    out = _StopsAtTheEnding(stop)
    code = serve(io.BytesIO(INIT), out, ENV, pid=1, client=FakeClient([ANSWER]), stop=stop)
    assert code == EXIT_COMPLETED
    assert _ops(out)[-1] == "exit"
    assert _lines(out)[-1]["exit_kind"] == "completed"
    assert _ops(out).count("exit") == 1


class _GoneAfterReady(io.BytesIO):
    """A supervisor that read ``ready`` and went away."""

    def write(self, data: Any) -> int:
        if self.getvalue():
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(data)


def test_a_supervisor_gone_after_ready_gets_no_paid_call() -> None:
    client = FakeClient([ANSWER])
    code = serve(io.BytesIO(INIT), _GoneAfterReady(), ENV, pid=1, client=client, stop=Stop())
    assert code == EXIT_CONFIG
    assert client.calls == 0


def test_stdout_gone_before_ready_runs_nothing() -> None:
    closed = io.BytesIO()
    closed.close()
    client = FakeClient([ANSWER])
    assert serve(io.BytesIO(INIT), closed, ENV, pid=1, client=client) == EXIT_CONFIG
    assert client.calls == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_the_signal_handlers_record_and_never_raise(signum: int) -> None:
    """Whatever the process is doing when the signal comes, it goes on; only the record says."""
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        stop = install()
        stop.signum = None
        os.kill(os.getpid(), signum)
        for _ in range(100):  # the handler runs at the next bytecode boundary
            if stop.requested:
                break
            time.sleep(0.001)
        assert stop.signum == signum
        os.kill(os.getpid(), signal.SIGTERM)  # a second one changes nothing
        time.sleep(0.01)
        assert stop.signum == signum
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        stop.signum = None


class _StopOnStart(io.BytesIO):
    """Output that asks the kernel to stop the moment ``iteration_start`` is written: the stop
    lands after the iteration began and before the model call."""

    def __init__(self, stop: Stop) -> None:
        super().__init__()
        self._stop = stop

    def write(self, data: Any) -> int:
        written = super().write(data)
        if b'"iteration_start"' in bytes(data):
            self._stop.request(signal.SIGTERM)
        return written


def test_a_stop_between_the_start_and_the_call_is_a_failed_exit_and_calls_nothing() -> None:
    """Whichever thread sees that stop first (the call refusing to start, or the watcher), the
    iteration has started, so the ending is the table's ``exit failed``, code 1."""
    stop = Stop()
    out = _StopOnStart(stop)
    client = FakeClient([ANSWER])
    assert serve(io.BytesIO(INIT), out, ENV, pid=1, client=client, stop=stop) == EXIT_FAILED
    assert _ops(out)[:2] == ["ready", "iteration_start"]
    assert _ops(out)[-1] == "exit"
    assert _lines(out)[-1]["exit_kind"] == "failed"
    assert client.calls == 0


class _Exited(Exception):
    """Raised by the stand-in for ``os._exit``."""


@pytest.mark.parametrize("work_over", [True, False])
def test_a_stopped_kernel_ends_without_the_interpreters_shutdown(
    monkeypatch: pytest.MonkeyPatch, work_over: bool
) -> None:
    """Once a stop was asked for, ``main`` ends the process with ``os._exit`` after the ending,
    whether the work is still running or already over (it saw the stop before its call). The
    interpreter's shutdown would put the default handlers back first thing: a supervisor's
    second SIGTERM landing then killed the kernel after its exit line, -15 for the code 1 the
    line had announced (seen in one run in three on a loaded machine)."""
    from scriptorium.kernel import worker

    exits: list[int] = []

    def stopped_serve(stdin: Any, stdout: Any, env: Any, *, stop: Stop) -> int:
        stop.request(signal.SIGTERM)
        stop.abandoned = not work_over
        return EXIT_FAILED

    def exit_now(code: int) -> None:
        exits.append(code)
        raise _Exited

    monkeypatch.setattr(worker, "install", Stop)  # no handler of the test process is touched
    monkeypatch.setattr(worker, "_claim_stdout", io.BytesIO)
    monkeypatch.setattr(worker, "serve", stopped_serve)
    monkeypatch.setattr(os, "_exit", exit_now)
    with pytest.raises(_Exited):
        worker.main()
    assert exits == [EXIT_FAILED]


def test_a_kernel_that_was_not_stopped_returns_its_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """No stop: the run's own code is returned and the interpreter ends normally."""
    from scriptorium.kernel import worker

    monkeypatch.setattr(worker, "install", Stop)
    monkeypatch.setattr(worker, "_claim_stdout", io.BytesIO)
    monkeypatch.setattr(worker, "serve", lambda *args, **kwargs: EXIT_COMPLETED)
    monkeypatch.setattr(os, "_exit", lambda code: pytest.fail("os._exit without a stop"))
    assert worker.main() == EXIT_COMPLETED
