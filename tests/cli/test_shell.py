"""What a user at a shell expects of the command: the version, ``-v`` on every command and a retry
notice without it, a batch that never destroys a file, its totals and progress, a provider batch
that always says where its job is, and Ctrl-C that keeps what was paid for."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import scriptorium
from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium.cli import main
from scriptorium.cli.batch import Progress
from scriptorium.cli.batch_records import Totals
from scriptorium.cli.logs import RetryNotice, logging_for
from scriptorium.cli.parser import build_parser
from tests.batch_project import KEY, KEY_ENV, label_text, make_project

COMMANDS = {
    "run": ["run", "p"],
    "prepare": ["prepare", "p"],
    "batch": ["batch", "p", "--in", "i", "--out", "o"],
    "list": ["list"],
    "check": ["check"],
    "verify": ["verify"],
    "serve": ["serve"],
}


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_the_version_is_the_installed_distributions(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([flag]) == 0
    out = capsys.readouterr().out
    assert out == f"scriptorium {scriptorium.__version__} (scriptorium-llm)\n"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_takes_v_and_vv(name: str) -> None:
    parser = build_parser()
    assert parser.parse_args([*COMMANDS[name], "-v"]).verbose == 1
    assert parser.parse_args([*COMMANDS[name], "-vv"]).verbose == 2
    assert parser.parse_args(["-v", *COMMANDS[name]]).verbose_before == 1


def test_install_hints_name_the_distribution(tmp_path: Path) -> None:
    """The one hint helper: a missing extra names ``scriptorium-llm[...]``, never the unrelated
    ``scriptorium`` of the public index."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['starlette'] = None\n"
            "try:\n    import scriptorium.httpapi\nexcept ModuleNotFoundError as err:\n"
            "    print(err)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "pip install 'scriptorium-llm[http]'" in done.stdout


def _retry_record(delay: float, attempt: int = 2) -> logging.LogRecord:
    record = logging.LogRecord("scriptorium.llm.retry", logging.INFO, "", 0, "retry", (), None)
    record.reason, record.delay_s = "overloaded", delay
    record.next_attempt, record.max_attempts = attempt, 3
    return record


def test_the_retry_notice_speaks_once_after_a_few_seconds_of_waiting() -> None:
    stream = io.StringIO()
    notice = RetryNotice(stream, after_s=3.0)
    notice.emit(_retry_record(1.5))
    assert stream.getvalue() == ""  # a short wait is not worth a line
    notice.emit(_retry_record(2.0, attempt=3))
    notice.emit(_retry_record(9.0))
    assert stream.getvalue() == (
        "scriptorium: retrying after overloaded (attempt 3 of 3), waiting 2.0s; "
        "-v shows every retry\n"
    )


def test_logging_for_routes_records_and_puts_everything_back() -> None:
    root = logging.getLogger("scriptorium")
    before = (root.level, list(root.handlers))
    stream = io.StringIO()
    with logging_for(1, stream):
        logging.getLogger("scriptorium.runner").info("repairing the output of p")
        logging.getLogger("scriptorium.runner").debug("not at -v")
    assert "INFO scriptorium.runner: repairing the output of p" in stream.getvalue()
    assert "not at -v" not in stream.getvalue()
    with logging_for(2, stream):
        logging.getLogger("scriptorium.runner").debug("at -vv")
    assert "DEBUG scriptorium.runner: at -vv" in stream.getvalue()
    assert (root.level, list(root.handlers)) == before


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture
def server(shared_server: FakeAnthropicServer) -> Iterator[FakeAnthropicServer]:
    shared_server.clear()
    shared_server.batches.text = label_text
    shared_server.default_text = '{"label": "x"}'  # valid for the label prompt
    yield shared_server
    shared_server.default_text = "ok"


@pytest.fixture
def project(tmp_path: Path, server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(KEY_ENV, KEY)
    return make_project(tmp_path / "project", "anthropic", server.url)


def _rows(path: Path, texts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"inputs": {"text": t}}) + "\n" for t in texts))
    return path


def test_v_logs_each_retry_with_its_reason_and_delay(
    project: Path, server: FakeAnthropicServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.fail(529, headers={"retry-after-ms": "10"})
    server.reply('{"label": "x"}')
    assert main(["run", "label", "--root", str(project), "-i", "text=hi", "-v"]) == 0
    err = capsys.readouterr().err
    assert "INFO scriptorium.llm.retry: retrying anthropic claude-haiku-4-5 after overloaded" in err
    assert KEY not in err


def test_batch_refuses_to_write_its_results_over_its_input(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows(tmp_path / "rows.jsonl", ["a"])
    before = rows.read_text()
    assert (
        main(["batch", "label", "--root", str(project), "--in", str(rows), "--out", str(rows)]) == 2
    )
    assert "is the --in file" in capsys.readouterr().err
    assert rows.read_text() == before


def test_batch_refuses_an_out_that_is_not_its_output_unless_told_to_overwrite(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows(tmp_path / "rows.jsonl", ["a", "b"])
    out = tmp_path / "notes.jsonl"
    out.write_text('{"paid": "forty results of another job"}\n')
    argv = ["batch", "label", "--root", str(project), "--in", str(rows), "--out", str(out)]
    assert main(argv) == 2
    assert "not a batch output of 'label'" in capsys.readouterr().err
    assert out.read_text() == '{"paid": "forty results of another job"}\n'
    assert main([*argv, "--overwrite", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["rows"], summary["valid"], summary["resumed"]) == (2, 2, 0)
    assert main([*argv, "--json"]) == 0  # now it is its own output: resumed, not refused
    assert json.loads(capsys.readouterr().out)["resumed"] == 2


def test_batch_refuses_the_output_of_another_prompt(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "prompts" / "other.prompt.md").write_text(
        (project / "prompts" / "label.prompt.md").read_text()
    )
    rows = _rows(tmp_path / "rows.jsonl", ["a"])
    out = tmp_path / "out.jsonl"
    base = ["--root", str(project), "--in", str(rows), "--out", str(out)]
    assert main(["batch", "other", *base]) == 0
    capsys.readouterr()
    assert main(["batch", "label", *base]) == 2
    assert "a result of prompt 'other'" in capsys.readouterr().err


def test_the_batch_summary_gives_tokens_and_cost(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows(tmp_path / "rows.jsonl", ["a", "b", "c"])
    out = tmp_path / "out.jsonl"
    argv = ["batch", "label", "--root", str(project), "--in", str(rows), "--out", str(out)]
    assert main([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    usages = [r["result"]["usage"] for r in records]
    assert summary["input_tokens"] == sum(u["input_tokens"] for u in usages)
    assert summary["output_tokens"] == sum(u["output_tokens"] for u in usages)
    assert summary["tokens"] == summary["input_tokens"] + summary["output_tokens"] > 0
    assert summary["cost_micro"] == sum(u["cost_micro"] for u in usages) > 0
    assert (summary["valid"], summary["invalid"], summary["failed"]) == (3, 0, 0)
    assert main(argv) == 0
    line = capsys.readouterr().out
    assert line.startswith("3 lines: 3 valid, 0 invalid, 0 failed (3 from earlier results); ")
    assert f"cost_micro {summary['cost_micro']}" in line


def test_the_progress_line_shows_rate_eta_and_cost_so_far() -> None:
    now = [100.0]
    stream = io.StringIO()
    progress = Progress(stream, 10, clock=lambda: now[0])
    totals = Totals()
    for _ in range(4):
        totals.add({"valid": True, "result": {"usage": {"output_tokens": 5, "cost_micro": 250}}})
    now[0] = 102.0
    progress.show(totals)
    progress.end()
    assert stream.getvalue() == (
        "\rbatch: 4/10 done, 0 failed, 0 invalid, 2.0 rows/s, ETA 3s, $0.001000 so far \n"
    )


def test_a_provider_batch_says_its_job_and_state_even_without_a_terminal(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows(tmp_path / "rows.jsonl", ["a", "b"])
    out = tmp_path / "out.jsonl"
    argv = ["batch", "label", "--root", str(project), "--in", str(rows), "--out", str(out)]
    assert main([*argv, "--provider-batch", "--poll-s", "0.01"]) == 0
    err = capsys.readouterr().err  # captured: not a terminal
    assert "(job " in err
    assert f"state {out}.state.json" in err


def test_ctrl_c_keeps_the_finished_rows_and_a_rerun_resumes(
    project: Path, server: FakeAnthropicServer, tmp_path: Path
) -> None:
    server.reply('{"label": "first"}')
    for _ in range(3):
        server.reply('{"label": "late"}', delay_s=1.0)
    rows = _rows(tmp_path / "rows.jsonl", ["a", "b", "c", "d"])
    out = tmp_path / "out.jsonl"
    journal = tmp_path / "out.jsonl.partial"
    command = [
        "batch", "label", "--root", str(project), "--in", str(rows), "--out", str(out),
        "--concurrency", "1",
    ]  # fmt: skip
    # Ctrl-C as a terminal sends it. A process started in the background of a non-interactive
    # shell (as CI may start the suite) inherits SIGINT ignored: give the child Python's handler.
    start = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "sys.argv = ['scriptorium', *sys.argv[1:]]; runpy.run_module('scriptorium', "
        "run_name='__main__')"
    )
    batch = subprocess.Popen(
        [sys.executable, "-c", start, *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, KEY_ENV: KEY},
    )
    deadline = time.monotonic() + 60
    while not (journal.exists() and journal.read_text().count("\n") >= 1):
        assert time.monotonic() < deadline, "the first row never finished"
        time.sleep(0.05)
    batch.send_signal(signal.SIGINT)
    _, err = batch.communicate(timeout=60)
    assert batch.returncode == 130
    assert "run the same command again to resume" in err
    # The row in flight at Ctrl-C is let finish: what the message counts is what was kept.
    kept = int(re.search(r"(\d+) of 4 rows finished and are kept", err).group(1))  # type: ignore[union-attr]
    assert 1 <= kept < 4
    assert journal.read_text().count("\n") == kept
    assert not out.exists()
    server.clear()
    server.default_text = '{"label": "rerun"}'
    assert main([*command, "--json"]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records[0]["result"]["validation"]["value"] == {"label": "first"}
    labels = [r["result"]["validation"]["value"]["label"] for r in records[kept:]]
    assert labels == ["rerun"] * (4 - kept)


def test_v_logs_each_repair(tmp_path: Path) -> None:
    from scriptorium import Engine
    from scriptorium.testing import FakeClient

    root = make_project(tmp_path / "p", "anthropic", "http://127.0.0.1:9")
    engine = Engine(
        root,
        client=FakeClient(['{"label": 3}', '{"label": "fixed"}']),
        repair=True,
        env={KEY_ENV: KEY},
    )
    stream = io.StringIO()
    with logging_for(1, stream):
        result = engine.run("label", inputs={"text": "hi"})
    assert result.validation.repaired
    assert "INFO scriptorium.runner: repairing the output of label (repair 1, 1 issue: /label" in (
        stream.getvalue()
    )
