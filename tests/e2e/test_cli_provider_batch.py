"""``scriptorium batch --provider-batch`` as a user runs it: a subprocess against a loopback fake
provider running in this test process, killed with SIGKILL at each step and started again. The
output must come out complete, each line once, and the provider must have been sent each
distinct request exactly once (the in-doubt submission included)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scriptorium import Engine, RunRequest
from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium._testing.openai_server import FakeOpenAIServer
from scriptorium.batch.job import CRASH_ENV, custom_id_of
from scriptorium.cli import main
from tests.batch_project import KEY, KEY_ENV, flagged, label_text, make_project

TEXTS = ["alpha", "beta", "alpha", "gamma", "BROKEN", "delta", "beta", "epsilon"]


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Any]]:
    with FakeAnthropicServer() as anthropic_server, FakeOpenAIServer() as openai_server:
        yield {"anthropic": anthropic_server, "openai": openai_server}


def _server(servers: dict[str, Any], provider: str) -> Any:
    server = servers[provider]
    server.clear()
    server.batches.text = label_text
    server.batches.error_rows(flagged("BROKEN"))
    return server


def _input(path: Path, texts: list[str]) -> Path:
    lines = [json.dumps({"id": f"row-{n}", "inputs": {"text": t}}) for n, t in enumerate(texts)]
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def _cli(
    root: Path, rows: Path, out: Path, *extra: str, crash: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, KEY_ENV: KEY}
    env.pop(CRASH_ENV, None)
    if crash is not None:
        env[CRASH_ENV] = crash
    command = [
        sys.executable, "-m", "scriptorium", "batch", "label", "--root", str(root),
        "--in", str(rows), "--out", str(out), "--provider-batch", "--poll-s", "0.01",
        "--batch-size", "2", *extra,
    ]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def _main(root: Path, rows: Path, out: Path, *extra: str) -> int:
    """The same command in this process (the SDKs are imported here already): the runs that are
    not killed need no process of their own."""
    return main(
        [
            "batch", "label", "--root", str(root), "--in", str(rows), "--out", str(out),
            "--provider-batch", "--poll-s", "0.01", "--batch-size", "2", *extra,
        ]
    )  # fmt: skip


def _hashes(root: Path, texts: list[str]) -> list[str]:
    engine = Engine(root, env={KEY_ENV: KEY})
    return [
        engine.prepare(RunRequest(prompt_id="label", inputs={"text": t})).request_hash
        for t in texts
    ]


def _check_output(out: Path, root: Path, texts: list[str]) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert [r["line"] for r in records] == list(range(1, len(texts) + 1))
    assert [r["id"] for r in records] == [f"row-{n}" for n in range(len(texts))]
    assert [r["request_hash"] for r in records] == _hashes(root, texts)
    for record, text in zip(records, texts, strict=True):
        if text == "BROKEN":
            assert record["error"]["code"] == "llm_generate"
        else:
            assert record["valid"] is True
            assert record["result"]["validation"]["value"]["label"].startswith("label-")
    return records


# Each killed run is a fresh interpreter importing an SDK (seconds on a busy machine): the
# steps a change is most likely to break run by default, the rest with the slow tests.
_SLOW = pytest.mark.slow
STEPS = [
    ("anthropic", "before-submit"),
    ("anthropic", "after-submit"),
    ("anthropic", "in-progress"),
    ("anthropic", "writing-results"),
    ("openai", "after-submit"),
    pytest.param("anthropic", "after-submit@2", marks=_SLOW),
    pytest.param("openai", "before-submit@2", marks=_SLOW),
    pytest.param("openai", "in-progress", marks=_SLOW),
    pytest.param("openai", "writing-results", marks=_SLOW),
]


@pytest.mark.parametrize(("provider", "step"), STEPS)
def test_a_kill_at_any_step_loses_no_row_and_pays_for_none_twice(
    servers: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    provider: str,
    step: str,
) -> None:
    server = _server(servers, provider)
    if step == "in-progress":
        server.batches.polls_before_end = 3
    root = make_project(tmp_path / "project", provider, server.url)
    rows, out = _input(tmp_path / "rows.jsonl", TEXTS), tmp_path / "out.jsonl"

    killed = _cli(root, rows, out, crash=step)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (tmp_path / "out.jsonl.state.json").exists()

    monkeypatch.setenv(KEY_ENV, KEY)
    assert _main(root, rows, out) == 1  # the BROKEN row failed, as scripted
    _check_output(out, root, TEXTS)
    submitted = Counter(server.batches.submitted_ids())
    assert set(submitted) == {custom_id_of(h) for h in _hashes(root, TEXTS)}
    assert set(submitted.values()) == {1}
    assert not (tmp_path / "out.jsonl.state.json").exists()


def test_the_output_lines_are_the_ones_a_local_batch_writes(
    servers: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    server = _server(servers, "anthropic")
    texts = ["alpha", "BROKEN", "beta"]
    root = make_project(tmp_path / "project", "anthropic", server.url)
    rows = _input(tmp_path / "rows.jsonl", texts)
    batch_out, local_out = tmp_path / "batch.jsonl", tmp_path / "local.jsonl"
    assert _main(root, rows, batch_out) == 1

    server.default_text = json.dumps({"label": "local"})
    server.reply(json.dumps({"label": "local"}))  # alpha, then BROKEN, run one at a time
    server.fail(400, message="broken")
    local = main(
        ["batch", "label", "--root", str(root), "--in", str(rows), "--out", str(local_out),
         "--concurrency", "1"]
    )  # fmt: skip
    server.default_text = "ok"
    assert local == 1
    batch_lines = [json.loads(x) for x in batch_out.read_text("utf-8").splitlines()]
    local_lines = [json.loads(x) for x in local_out.read_text("utf-8").splitlines()]
    for ours, theirs in zip(batch_lines, local_lines, strict=True):
        assert ours.keys() == theirs.keys()
        assert ours["line"] == theirs["line"]
        assert ours["request_hash"] == theirs["request_hash"]
        if "result" in ours:
            assert ours["result"].keys() == theirs["result"].keys()
            assert ours["result"]["prepared"] == theirs["result"]["prepared"]
        else:
            assert ours["error"]["code"] == theirs["error"]["code"] == "llm_generate"
            assert ours["error"]["reason"] == theirs["error"]["reason"] == "invalid_request"


def test_a_state_file_of_another_batch_is_refused(
    servers: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    server = _server(servers, "anthropic")
    root = make_project(tmp_path / "project", "anthropic", server.url)
    out = tmp_path / "out.jsonl"
    # A job left unfinished for other rows.
    Engine(root).submit_batch(
        [RunRequest(prompt_id="label", inputs={"text": "one"})],
        state=tmp_path / "out.jsonl.state.json",
    )
    assert _main(root, _input(tmp_path / "b.jsonl", ["two"]), out) == 2
    assert "belongs to another batch" in capsys.readouterr().err
    assert len(server.batches.created) == 1


def test_a_finished_output_removes_its_own_leftover_state_but_not_anothers(
    servers: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    server = _server(servers, "anthropic")
    root = make_project(tmp_path / "project", "anthropic", server.url)
    rows, out = _input(tmp_path / "rows.jsonl", ["one", "two"]), tmp_path / "out.jsonl"
    state = tmp_path / "out.jsonl.state.json"
    assert _main(root, rows, out) == 0
    # Killed between writing --out and removing the state: the next run only tidies up.
    engine = Engine(root)
    requests = [RunRequest(prompt_id="label", inputs={"text": t}) for t in ("one", "two")]
    engine.submit_batch(requests, state=state).wait(0.01)
    created = len(server.batches.created)
    assert _main(root, rows, out) == 0
    assert not state.exists()
    assert len(server.batches.created) == created
    # A state of some other job is not this run's to delete.
    engine.submit_batch([RunRequest(prompt_id="label", inputs={"text": "other"})], state=state)
    assert _main(root, rows, out) == 0
    assert state.exists()
