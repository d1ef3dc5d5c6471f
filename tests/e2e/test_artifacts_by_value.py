"""Artifacts by value from the outside: a CLI batch line and a kernel payload carrying the content
itself as ``{"text": ...}`` or ``{"base64": ...}``, in real subprocesses."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60

ECHO = """---
profile: offline
artifacts:
  document: {required: true, media_type: "text/*"}
---
Read: {{ artifacts.document.text }}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "echo.prompt.md").write_text(ECHO, encoding="utf-8")
    (tmp_path / "profiles" / "offline.yaml").write_text(
        "provider: fake\nmodel: fake-1\noptions: {responses: [done]}\n", encoding="utf-8"
    )
    (tmp_path / "card.txt").write_text("from a file", encoding="utf-8")
    return tmp_path


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_batch_lines_may_carry_artifacts_by_value(project: Path, tmp_path: Path) -> None:
    """A batch line's artifact is a path, ``{"text": ...}`` or ``{"base64": ...}``; a malformed
    one fails that line only."""
    lines = [
        {"id": "file", "artifacts": {"document": "card.txt"}},
        {"id": "text", "artifacts": {"document": {"text": "inline text"}}},
        {
            "id": "b64",
            "artifacts": {
                "document": {"base64": base64.b64encode(b"bytes").decode(), "filename": "d.txt"}
            },
        },
        {"id": "bad", "artifacts": {"document": {"base64": "%%%"}}},
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "scriptorium", "batch", "echo", "--in", str(source), "--out", out],
        cwd=project,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode != 0  # one line failed
    records = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    arts = {k: records[k]["result"]["prepared"]["artifacts"][0] for k in ("file", "text", "b64")}
    assert arts["file"]["source"] == "file"
    assert (arts["text"]["source"], arts["text"]["sha256"]) == ("value", _digest(b"inline text"))
    assert (arts["b64"]["ref"], arts["b64"]["sha256"]) == ("d.txt", _digest(b"bytes"))
    assert records["text"]["result"]["prepared"]["messages"][0]["content"] == "Read: inline text"
    assert records["bad"]["error"]["code"] == "invalid_request"


def test_a_kernel_payload_may_carry_artifacts_by_value(project: Path) -> None:
    """The prompt-run payload accepts ``{"text": ...}`` artifacts and runs them through the engine."""
    payload = {
        "prompt_id": "echo",
        "root": str(project),
        "artifacts": {"document": {"text": "kernel text"}},
    }
    proc = subprocess.run(
        [sys.executable, "-m", "scriptorium.kernel"],
        input=json.dumps({"op": "init", "payload": payload}) + "\n",
        cwd=project,
        env=_env(CC_LLM_PROVIDER="profile"),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr
    messages = [json.loads(line) for line in proc.stdout.splitlines()]
    assert messages[-1] == {"op": "exit", "exit_kind": "completed", "summary": "done"}
