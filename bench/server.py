"""The loopback Messages API the benchmarks call: ``FakeAnthropicServer`` answering every request
with the extraction in the shape the caller asked for.

The task is told by the model: :data:`bench.task.PERSON_MODEL` gets :data:`bench.task.PERSON`,
any other model the invoice :data:`bench.task.INSTANCE`.

- a request with ``tools`` gets a ``tool_use`` block (named by ``tool_choice``, else the first
  tool) whose input is the instance — what Instructor, Pydantic AI and langchain ask;
- any other request gets one text block holding the instance as JSON (the plain floor, the
  ``output_config`` route and scriptorium's ``native`` and ``prompt`` strategies).

It runs in a subprocess (``serve``), so its work never competes for the benchmark process's GIL:
the client's CPU is what is measured. Answers are built once per shape and reused.

    python -m bench.server --latency 0.05     # prints the base URL, serves until stdin closes
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

from bench.task import INSTANCE, PERSON, PERSON_MODEL
from scriptorium._testing.http import Answer, RecordedRequest
from scriptorium.testing import FakeAnthropicServer

__all__ = ["ExtractionServer", "serve"]

_USAGE = {"input_tokens": 412, "output_tokens": 87}


class ExtractionServer(FakeAnthropicServer):
    """``FakeAnthropicServer`` whose default answer is the extraction, as text or as a tool call."""

    def __init__(self, *, latency_s: float = 0.0) -> None:
        super().__init__(latency_s=latency_s, record=False)
        self._bodies: dict[str, bytes] = {}

    def _body(self, shape: str, model: str) -> bytes:
        key = f"{shape}\0{model}"
        body = self._bodies.get(key)
        if body is None:
            instance = PERSON if model == PERSON_MODEL else INSTANCE
            if shape.startswith("tool:"):
                block: dict[str, Any] = {
                    "type": "tool_use",
                    "id": "toolu_bench",
                    "name": shape[5:],
                    "input": instance,
                }
                stop = "tool_use"
            else:
                block = {"type": "text", "text": json.dumps(instance)}
                stop = "end_turn"
            message = {
                "id": "msg_bench",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [block],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": _USAGE,
            }
            body = self._bodies[key] = json.dumps(message).encode("utf-8")
        return body

    def default_answer(self, request: RecordedRequest) -> Answer:
        """The extraction in the shape the request asks for."""
        body = request.body if isinstance(request.body, dict) else {}
        model = body.get("model") if isinstance(body.get("model"), str) else "claude-fake"
        shape = "text"
        tools = body.get("tools")
        if isinstance(tools, list) and tools:
            choice = body.get("tool_choice")
            name = choice.get("name") if isinstance(choice, dict) else None
            if not isinstance(name, str):
                first = tools[0]
                name = first.get("name") if isinstance(first, dict) else None
            shape = f"tool:{name or 'output'}"
        return Answer(200, self._body(shape, str(model)))


@contextlib.contextmanager
def serve_process(argv: list[str]) -> Iterator[str]:
    """Run a loopback server as ``python <argv>`` in a subprocess, which prints its base URL on
    its first line and serves until its standard input closes; yields the URL."""
    proc = subprocess.Popen(
        [sys.executable, *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError("the benchmark server did not start")
        yield url
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def serve(latency_s: float = 0.0) -> Iterator[str]:
    """Run :class:`ExtractionServer` in a subprocess; yields its base URL."""
    with serve_process(["-m", "bench.server", "--latency", str(latency_s)]) as url:
        yield url


def main(argv: list[str] | None = None) -> None:
    """Serve until standard input closes (the parent benchmark exits or closes the pipe)."""
    parser = argparse.ArgumentParser(prog="python -m bench.server")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args(argv)
    with ExtractionServer(latency_s=args.latency) as server:
        print(server.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
