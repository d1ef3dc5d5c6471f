"""What the executor tests share: a loopback Anthropic server that echoes each row and notes when
each request arrived, and a project whose profile points at it."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from scriptorium._testing.http import Answer, RecordedRequest
from scriptorium.testing import FakeAnthropicServer

MODEL = "claude-sonnet-4-5"
PROMPT = """---
profile: claude
inputs:
  type: object
  required: [name]
  properties: {name: {type: string}}
---
Say hello to {{ name }}.
"""
# What changes from one run of the same rows to the next, whatever runs them.
VOLATILE = frozenset(
    {
        "run_id",
        "started_at",
        "finished_at",
        "duration_ms",
        "latency_ms",
        "request_id",
        "response_id",
    }
)


class EchoServer(FakeAnthropicServer):
    """Answers every unscripted request with its prompt's text, and keeps the arrival time and
    status of every request."""

    def __init__(self, *, latency_s: float = 0.0) -> None:
        super().__init__(latency_s=latency_s)
        self._lock = threading.Lock()
        self._log: list[tuple[float, int]] = []

    @property
    def arrivals(self) -> list[float]:
        """``time.monotonic()`` of each request's arrival, in order."""
        with self._lock:
            return sorted(t for t, _ in self._log)

    @property
    def log(self) -> list[tuple[float, int]]:
        """Each request's arrival time and the status it was answered with, in order."""
        with self._lock:
            return sorted(self._log)

    def _answer(self, request: RecordedRequest) -> tuple[Answer, float]:
        arrived = time.monotonic()
        answer, delay_s = super()._answer(request)
        with self._lock:
            self._log.append((arrived, answer.status))
        return answer, delay_s

    def default_answer(self, request: RecordedRequest) -> Answer:
        prompt = request.body["messages"][-1]["content"]
        text = prompt if isinstance(prompt, str) else prompt[0]["text"]
        body = {
            "id": self._next_id(),
            "type": "message",
            "role": "assistant",
            "model": request.body.get("model", MODEL),
            "content": [{"type": "text", "text": f"echo: {text}"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 4},
        }
        return Answer.json(body)


def write_project(
    root: Path, endpoint: str, key_env: str, limits: dict[str, Any] | None = None
) -> Path:
    """A project with the ``hello`` prompt and a ``claude`` profile at ``endpoint``."""
    (root / "prompts").mkdir(parents=True, exist_ok=True)
    (root / "profiles").mkdir(parents=True, exist_ok=True)
    (root / "prompts" / "hello.prompt.md").write_text(PROMPT, encoding="utf-8")
    profile: dict[str, Any] = {
        "provider": "anthropic",
        "model": MODEL,
        "endpoint": endpoint,
        "api_key_env": key_env,
        "settings": {"max_tokens": 64},
    }
    if limits is not None:
        profile["limits"] = limits
    (root / "profiles" / "claude.yaml").write_text(json.dumps(profile), encoding="utf-8")
    return root


def write_rows(path: Path, count: int) -> Path:
    """``count`` input lines, each a different name."""
    lines = [json.dumps({"id": i, "inputs": {"name": f"row {i}"}}) for i in range(count)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def stable(value: Any) -> Any:
    """``value`` without what differs between runs (ids, times)."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def most_in_any_window(arrivals: list[float], window_s: float) -> int:
    """The most arrivals that fall in any half-open window ``[t, t + window_s)``."""
    times = sorted(arrivals)
    best = 0
    start = 0
    for end, t in enumerate(times):
        while times[start] <= t - window_s:
            start += 1
        best = max(best, end - start + 1)
    return best
