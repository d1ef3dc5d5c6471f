"""Every entry point gets fallbacks from the run flow: the command line (``run -v --json`` in a
subprocess), the HTTP API (in-process, through ``engine.arun``), the kernel (a subprocess with
``CC_LLM_PROVIDER=profile``) and ``scriptorium batch``, killed midway and resumed: the rows a
backup answered are found by their first profile's request hash and not sent again."""

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

from scriptorium import Engine
from scriptorium.cli import main
from tests.e2e.fallback_support import (
    BACKUP_MODEL,
    GPT_MODEL,
    Servers,
    cost,
    drop_engines,
    keys,
    servers,
)
from tests.e2e.test_cli import cli_env, scriptorium
from tests.e2e.test_kernel import Ledger, kernel_env, supervise


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    with servers(tmp_path_factory.mktemp("fallback-entry")) as running:
        yield running


@pytest.fixture
def loop(project: Servers) -> Iterator[Servers]:
    project.reset()
    yield project
    drop_engines()


def test_the_command_line_falls_back_and_says_so_with_v(loop: Servers) -> None:
    loop.primary.fail(529)
    loop.backup.reply("Hello, Ada!", usage={"input_tokens": 12, "output_tokens": 3})
    done = scriptorium(
        "run", "hello", "-i", "name=Ada", "--root", str(loop.root), "--json", "-v",
        cwd=loop.root, env=cli_env(**keys()),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["output"]["text"] == "Hello, Ada!"
    assert [(f["profile"], f["reason"], f["attempts"]) for f in result["fallbacks"]] == [
        ("primary", "overloaded", 1)
    ]
    [attempt] = result["attempts"]
    assert (attempt["profile"], attempt["provider"], attempt["model"]) == (
        "backup",
        "anthropic",
        BACKUP_MODEL,
    )
    assert result["usage"]["cost_micro"] == cost("backup", 12, 3)
    assert result["usage"]["llm_calls"] == 2
    assert "falling back from primary to backup after overloaded" in done.stderr
    for value in keys().values():
        assert value not in done.stdout
        assert value not in done.stderr


def test_the_command_line_error_carries_the_fallbacks_and_usage(loop: Servers) -> None:
    loop.primary.fail(529)
    loop.backup.fail(500)
    loop.gpt.fail(500)
    done = scriptorium(
        "run", "hello", "--root", str(loop.root), "--json", cwd=loop.root, env=cli_env(**keys())
    )
    assert done.returncode != 0
    error = json.loads(done.stderr)["error"]  # --json errors go to stderr, as one object
    assert (error["code"], error["reason"], error["provider"]) == (
        "llm_generate",
        "server_error",
        "openai",
    )
    assert [f["profile"] for f in error["fallbacks"]] == ["primary", "backup"]
    assert error["usage"]["llm_calls"] == 3


def test_the_http_api_falls_back(loop: Servers) -> None:
    pytest.importorskip("starlette")
    from scriptorium.httpapi import create_app
    from tests.httpapi.project import call

    loop.primary.fail(429)
    loop.backup.fail(529)
    loop.gpt.reply("Hi from gpt", prompt_tokens=9, completion_tokens=3)
    app = create_app(Engine(loop.root, env=keys()))
    response = call(app, "POST", "/v1/runs", json={"prompt_id": "hello"})
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["output"]["text"] == "Hi from gpt"
    assert [(f["profile"], f["reason"]) for f in result["fallbacks"]] == [
        ("primary", "rate_limited"),
        ("backup", "overloaded"),
    ]
    assert result["prepared"]["profile"] == "gpt"
    assert result["model"] == GPT_MODEL
    assert result["usage"]["cost_micro"] == cost("gpt", 9, 3)
    assert loop.calls() == (1, 1, 1)


def test_the_http_api_error_carries_the_fallbacks_and_usage(loop: Servers) -> None:
    pytest.importorskip("starlette")
    from scriptorium.httpapi import create_app
    from tests.httpapi.project import call

    loop.primary.fail(529)
    loop.backup.fail(500)
    loop.gpt.fail(500)
    app = create_app(Engine(loop.root, env=keys()))
    response = call(app, "POST", "/v1/runs", json={"prompt_id": "hello"})
    assert response.status_code == 502, response.text
    error = response.json()["error"]
    assert (error["code"], error["reason"], error["provider"]) == (
        "llm_generate",
        "server_error",
        "openai",
    )
    assert [(f["profile"], f["reason"]) for f in error["fallbacks"]] == [
        ("primary", "overloaded"),
        ("backup", "server_error"),
    ]
    assert all(f["message"] for f in error["fallbacks"])
    assert error["usage"]["llm_calls"] == 3
    assert str(loop.root) not in response.text
    for value in keys().values():
        assert value not in response.text


def test_the_kernel_falls_back_and_charges_what_every_profile_used(loop: Servers) -> None:
    loop.primary.fail(500)
    loop.backup.reply("Kernel hello", usage={"input_tokens": 20, "output_tokens": 4})
    payload = {"prompt_id": "hello", "inputs": {"name": "Ada"}, "root": str(loop.root)}
    ledger = Ledger()
    done = supervise(kernel_env(CC_LLM_PROVIDER="profile", **keys()), payload, ledger)
    assert done.returncode == 0, done.stderr
    result = done.messages[-2]["result"]
    assert result["output"]["text"] == "Kernel hello"
    assert [f["reason"] for f in result["fallbacks"]] == ["server_error"]
    assert result["prepared"]["profile"] == "backup"
    assert ledger.totals["cost_micro"] == cost("backup", 20, 4)
    assert loop.calls() == (1, 1, 0)


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def test_a_batch_killed_midway_resumes_rows_answered_by_any_profile(
    loop: Servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = 5
    for _ in range(2 * rows):
        loop.primary.fail(500)  # not "busy": every row asks the first profile, and falls back
        loop.backup.reply("from the backup", delay_s=0.4)
    source = tmp_path / "in.jsonl"
    source.write_text(
        "".join(json.dumps({"id": i, "inputs": {"name": f"n{i}"}}) + "\n" for i in range(rows)),
        "utf-8",
    )
    out = tmp_path / "out.jsonl"
    journal = tmp_path / "out.jsonl.partial"
    args = ["batch", "hello", "--root", str(loop.root), "--in", str(source), "--out", str(out)]
    env = cli_env(**keys())
    first = subprocess.Popen(
        [sys.executable, "-m", "scriptorium", *args, "--concurrency", "1"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while len(_lines(journal)) < 2 and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.02)
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    journaled = _lines(journal)
    assert 2 <= len(journaled) < rows, "the batch was not killed midway"
    assert not out.exists()
    assert all(r["result"]["prepared"]["profile"] == "backup" for r in journaled)
    # Each row is keyed by its first profile's request hash, whichever profile answered it.
    engine = Engine(loop.root, env=keys())
    first_hashes = {
        i: engine.prepare("hello", inputs={"name": f"n{i}"}).request_hash for i in range(rows)
    }
    for record in journaled:
        assert record["request_hash"] == first_hashes[record["id"]]
        assert record["result"]["prepared"]["request_hash"] != record["request_hash"]

    sent_before = len(loop.backup.requests)
    monkeypatch.chdir(tmp_path)
    for name, value in keys().items():
        monkeypatch.setenv(name, value)
    assert main([*args, "--concurrency", "1", "--json"]) == 0
    finished = _lines(out)
    assert [r["id"] for r in finished] == list(range(rows))
    assert all(r["result"]["output"]["text"] == "from the backup" for r in finished)
    # Only the rows not journaled were sent again; the journaled ones were copied.
    assert len(loop.backup.requests) - sent_before == rows - len(journaled)
    by_id = {r["id"]: r for r in finished}
    for record in journaled:
        assert by_id[record["id"]]["result"] == record["result"]
