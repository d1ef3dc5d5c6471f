"""``scriptorium batch`` and its files: one batch per ``--out`` at a time (the second exits 2
naming the first's pid), and input lines split at ``\\n`` only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scriptorium.batch.lock import OutputLock, lock_path
from scriptorium.cli import main
from scriptorium.testing import FakeAnthropicServer

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-batch-lock-canary-2e9f41"
GREET = """---
profile: offline
inputs: {type: object, required: [name], properties: {name: {type: string}}}
---
Hello {{ name }}!
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "greet.prompt.md").write_text(GREET, encoding="utf-8")
    (tmp_path / "profiles" / "offline.yaml").write_text(
        "provider: fake\nmodel: fake-1\noptions: {responses: ['Hi.']}\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]


def test_a_second_batch_on_a_locked_out_exits_2_naming_the_holder(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = project / "in.jsonl"
    source.write_text('{"inputs": {"name": "Ann"}}\n', encoding="utf-8")
    out = project / "out.jsonl"
    with OutputLock(out):
        assert main(["batch", "greet", "--in", str(source), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("scriptorium: invalid_request: --out ")
        assert f"process {os.getpid()}" in err
        assert not out.exists()
    assert main(["batch", "greet", "--in", str(source), "--out", str(out)]) == 0
    assert len(_lines(out)) == 1
    assert not lock_path(out).exists(), "the lock file goes with the batch that held it"


def test_a_lock_left_by_a_dead_batch_does_not_block_the_next(project: Path) -> None:
    """The kernel lets a dead holder's lock go; its stale file is taken over."""
    source = project / "in.jsonl"
    source.write_text('{"inputs": {"name": "Ann"}}\n', encoding="utf-8")
    out = project / "out.jsonl"
    lock_path(out).write_text("999999\n", encoding="ascii")
    assert main(["batch", "greet", "--in", str(source), "--out", str(out)]) == 0


def test_the_lock_file_is_never_read_as_output(project: Path) -> None:
    """A resume reads ``--out`` and its journal, never ``<out>.lock``."""
    source = project / "in.jsonl"
    source.write_text('{"inputs": {"name": "Ann"}}\n{"inputs": {"name": "Bo"}}\n', "utf-8")
    out = project / "out.jsonl"
    assert main(["batch", "greet", "--in", str(source), "--out", str(out)]) == 0
    first = _lines(out)
    lock_path(out).write_text(json.dumps(first[0]) + "\nnot a record\n", encoding="utf-8")
    assert main(["batch", "greet", "--in", str(source), "--out", str(out), "--json"]) == 0
    assert [r["line"] for r in _lines(out)] == [1, 2]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes and locks")
def test_two_processes_on_one_out_never_interleave(project: Path) -> None:
    """A real second process while the first is still writing: exit 2 naming the first's pid;
    the first finishes with every row, each line whole."""
    rows = 4
    with FakeAnthropicServer(latency_s=0.4) as server:
        (project / "profiles" / "slow.yaml").write_text(
            f"provider: anthropic\nmodel: claude-sonnet-4-6\nendpoint: {server.url}\n"
            "api_key_env: BATCH_LOCK_KEY\n",
            encoding="utf-8",
        )
        source = project / "in.jsonl"
        source.write_text(
            "".join(json.dumps({"id": i, "inputs": {"name": f"n{i}"}}) + "\n" for i in range(rows)),
            encoding="utf-8",
        )
        out = project / "out.jsonl"
        argv = [sys.executable, "-m", "scriptorium", "batch", "greet", "-p", "slow"]
        argv += ["--in", str(source), "--out", str(out), "--concurrency", "1"]
        env = {**os.environ, "PYTHONPATH": str(REPO), "BATCH_LOCK_KEY": KEY}
        with subprocess.Popen(
            argv, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as first:
            deadline = time.monotonic() + 30
            while not (lock_path(out).exists() and lock_path(out).read_text().strip()):
                assert time.monotonic() < deadline, "the first batch never took its lock"
                assert first.poll() is None, first.communicate()
                time.sleep(0.02)
            second = subprocess.run(
                argv, cwd=project, env=env, capture_output=True, text=True, timeout=60
            )
            _, stderr = first.communicate(timeout=60)
        assert second.returncode == 2, second.stderr
        assert f"process {first.pid}" in second.stderr
        assert first.returncode == 0, stderr
    records = _lines(out)
    assert [r["id"] for r in records] == list(range(rows))
    assert all(r["valid"] for r in records)
    assert KEY not in second.stderr + stderr + out.read_text(encoding="utf-8")


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1e"])
def test_input_lines_are_split_at_newlines_only(
    project: Path, capsys: pytest.CaptureFixture[str], separator: str
) -> None:
    """A JSON string holding U+2028, U+0085, a form feed ... raw is text: every line runs, with
    its own line number."""
    source = project / "in.jsonl"
    names = [f"A{separator}nn", "Bo", f"C{separator}y"]
    lines = [
        json.dumps({"id": i, "inputs": {"name": n}}, ensure_ascii=False)
        for i, n in enumerate(names)
    ]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = project / "out.jsonl"
    assert main(["batch", "greet", "--in", str(source), "--out", str(out)]) == 0, (
        capsys.readouterr()
    )
    records = _lines(out)
    assert [(r["line"], r["id"]) for r in records] == [(1, 0), (2, 1), (3, 2)]
    sent = [r["result"]["prepared"]["messages"][0]["content"] for r in records]  # type: ignore[index]
    assert sent == [f"Hello {n}!" for n in names]


def test_crlf_lines_and_blank_lines_keep_their_numbers(project: Path) -> None:
    source = project / "in.jsonl"
    source.write_bytes(b'{"inputs": {"name": "Ann"}}\r\n\r\n{"inputs": {"name": "Bo"}}\r\n')
    out = project / "out.jsonl"
    assert main(["batch", "greet", "--in", str(source), "--out", str(out)]) == 0
    assert [r["line"] for r in _lines(out)] == [1, 3]


def test_a_line_nested_too_deeply_is_that_lines_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 100,000-deep line is a ``not JSON`` error record of its own; the rest run."""
    source = project / "in.jsonl"
    deep = '{"inputs": {"name": ' + "[" * 100_000 + "]" * 100_000 + "}}"
    source.write_text(deep + '\n{"inputs": {"name": "Bo"}}\n', encoding="utf-8")
    out = project / "out.jsonl"
    assert main(["batch", "greet", "--in", str(source), "--out", str(out)]) == 1
    records = _lines(out)
    assert records[0]["error"]["code"] == "invalid_request"  # type: ignore[index]
    assert records[1]["valid"] is True
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX symlinks")
def test_a_symlink_in_place_of_the_lock_file_is_refused_not_followed(project: Path) -> None:
    source = project / "in.jsonl"
    source.write_text('{"inputs": {"name": "Ann"}}\n', encoding="utf-8")
    victim = project / "precious.txt"
    victim.write_text("keep me", encoding="utf-8")
    out = project / "out.jsonl"
    lock_path(out).symlink_to(victim)
    assert main(["batch", "greet", "--in", str(source), "--out", str(out)]) == 2
    assert victim.read_text(encoding="utf-8") == "keep me"


def test_a_batch_whose_lines_all_failed_for_one_reason_says_it(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reason is in the summary, not only in the output file."""
    monkeypatch.delenv("SCRIPTORIUM_TEST_UNSET_KEY", raising=False)
    (project / "profiles" / "keyed.yaml").write_text(
        "provider: anthropic\nmodel: claude-sonnet-4-6\napi_key_env: SCRIPTORIUM_TEST_UNSET_KEY\n",
        encoding="utf-8",
    )
    source = project / "in.jsonl"
    source.write_text('{"inputs": {"name": "Ann"}}\n' * 3, encoding="utf-8")
    out = project / "out.jsonl"
    assert main(["batch", "greet", "-p", "keyed", "--in", str(source), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "all 3 lines failed with api_key_env_missing" in err
    assert "SCRIPTORIUM_TEST_UNSET_KEY" in err
    capsys.readouterr()
    out.unlink()
    assert (
        main(["batch", "greet", "-p", "keyed", "--in", str(source), "--out", str(out), "--json"])
        == 1
    )
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert summary["first_error"]["code"] == "api_key_env_missing"
