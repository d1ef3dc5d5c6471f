"""The ``scriptorium`` command, run as users run it: in a subprocess, over a project on disk.

Every documented exit status is reached for real; the stderr line format and the
``--json`` forms are parsed; ``prepare`` is shown to make no call; ``list``, ``check``, ``verify``
and ``batch`` are exercised end to end.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SECRET = "test-key-value-7f3a9c"
ERROR_LINE = re.compile(r"^scriptorium: [a-z_]+: \S.*$")


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def write_files(root: Path, files: Mapping[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a user with no provider keys set, importing this checkout."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def scriptorium(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scriptorium", *args],
        cwd=cwd,
        env=dict(cli_env() if env is None else env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def only_error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with one prompt per way of failing."""
    root = tmp_path_factory.mktemp("project")
    port = closed_port()
    write_files(
        root,
        {
            "prompts/greet.prompt.md": (
                "---\nprofile: offline\ninputs:\n  type: object\n  required: [name]\n"
                "  properties: {name: {type: string}}\n---\n## system\nYou greet people.\n\n"
                "## user\nHello {{ name }}!\n"
            ),
            "prompts/json/answer.prompt.md": (
                "---\nprofile: prose\noutput: {format: json}\n---\nAnswer in JSON.\n"
            ),
            "prompts/noprofile.prompt.md": "Say hi.\n",
            "prompts/render.prompt.md": "---\nprofile: offline\n---\nHi {{ missing }}\n",
            "prompts/badschema.prompt.md": (
                "---\nprofile: offline\noutput: {format: json_schema, schema: nowhere.json}\n"
                "---\nAnswer.\n"
            ),
            "prompts/withdoc.prompt.md": (
                "---\nprofile: offline\nartifacts:\n  document: {required: true}\n---\n"
                "{{ artifacts.document.text }}\n"
            ),
            "prompts/remote.prompt.md": "---\nprofile: closed\n---\nSay hi.\n",
            "profiles/offline.yaml": "provider: fake\nmodel: fake-1\noptions: {responses: [Hello!]}\n",
            "profiles/prose.yaml": "provider: fake\noptions: {responses: [not json at all]}\n",
            "profiles/closed.yaml": (
                f"provider: openai\nmodel: m\nendpoint: http://127.0.0.1:{port}/v1\n"
                "api_key_env: SCRIPTORIUM_TEST_KEY\nsettings: {max_retries: 0, timeout_s: 10}\n"
            ),
            "profiles/claude.yaml": (
                "provider: anthropic\nmodel: claude-sonnet-4-6\napi_key_env: ANTHROPIC_API_KEY\n"
            ),
            "profiles/keyless.yaml": "provider: anthropic\nmodel: claude-sonnet-4-6\n",
            "doc.txt": "A document.\n",
        },
    )
    return root


EXIT_CASES = [
    (1, ["run", "json/answer"], "output_invalid"),
    (2, ["run", "greet"], "invalid_request"),
    (2, ["run", "greet", "--no-such-option"], "usage"),
    (3, ["run", "noprofile"], "profile_required"),
    (3, ["run", "greet", "-i", "name=Ada", "-p", "claude"], "api_key_env_missing"),
    (3, ["run", "greet", "-i", "name=Ada", "-p", "keyless"], "api_key_required"),
    (4, ["run", "absent"], "prompt_load"),
    (4, ["run", "greet", "-i", "name=Ada", "-p", "absent"], "profile_load"),
    (4, ["run", "withdoc", "-a", "document=absent.txt"], "artifact_load"),
    (5, ["run", "render"], "prompt_render"),
    (6, ["run", "remote"], "llm_generate"),
    (7, ["run", "badschema"], "validation"),
]


@pytest.mark.parametrize(("status", "args", "code"), EXIT_CASES, ids=[c[2] for c in EXIT_CASES])
def test_each_failure_exits_with_its_status_and_one_stderr_line(
    project: Path, status: int, args: list[str], code: str
) -> None:
    """The documented exit codes, each reached for real, with `scriptorium: <code>: <message>`."""
    done = scriptorium(*args, cwd=project, env=cli_env(SCRIPTORIUM_TEST_KEY=SECRET))
    assert done.returncode == status, done.stderr
    line = only_error_line(done.stderr)
    assert ERROR_LINE.match(line), line
    assert line.startswith(f"scriptorium: {code}: ")
    assert SECRET not in done.stdout + done.stderr


def test_run_prints_the_output_text_and_exits_zero(project: Path) -> None:
    done = scriptorium("run", "greet", "-i", "name=Ada", cwd=project)
    assert (done.returncode, done.stdout, done.stderr) == (0, "Hello!\n", "")


def test_run_json_prints_the_run_result(project: Path) -> None:
    done = scriptorium("run", "greet", "--input", "name=Ada", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["output"]["text"] == "Hello!"
    assert result["validation"]["valid"] is True
    assert result["prepared"]["messages"][0]["content"] == "Hello Ada!"
    assert result["prepared"]["request_hash"].startswith("sha256:")


def test_invalid_output_is_printed_and_exits_one_with_json_error(project: Path) -> None:
    """With --json the RunResult still reaches stdout; the error object goes to stderr."""
    done = scriptorium("run", "json/answer", "--json", cwd=project)
    assert done.returncode == 1
    assert json.loads(done.stdout)["validation"]["valid"] is False
    error = json.loads(only_error_line(done.stderr))["error"]
    assert error["code"] == "output_invalid"
    assert error["message"]


@pytest.mark.parametrize(
    ("args", "code"),
    [(["run", "absent", "--json"], "prompt_load"), (["run", "--json"], "usage")],
)
def test_json_errors_are_one_parseable_object_on_stderr(
    project: Path, args: list[str], code: str
) -> None:
    done = scriptorium(*args, cwd=project)
    assert done.returncode in (2, 4)
    assert done.stdout == ""
    body = json.loads(only_error_line(done.stderr))
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str)


def test_prepare_makes_no_call_to_an_unreachable_endpoint(project: Path) -> None:
    """The `closed` profile points at a closed loopback port (run fails with 6); prepare works."""
    env = cli_env(SCRIPTORIUM_TEST_KEY=SECRET)
    done = scriptorium("prepare", "remote", "--json", "--max-tokens", "77", cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    prepared = json.loads(done.stdout)
    assert prepared["target"]["endpoint"].startswith("http://127.0.0.1:")
    assert prepared["target"]["api_key_env"] == "SCRIPTORIUM_TEST_KEY"
    assert prepared["settings"]["max_tokens"] == 77
    assert prepared["settings_sources"]["max_tokens"] == "override"
    assert prepared["settings_sources"]["max_retries"] == "profile"
    assert SECRET not in done.stdout


def test_prepare_text_shows_messages_target_sources_and_hashes(project: Path) -> None:
    done = scriptorium(
        "prepare", "greet", "--inputs", "-", "-i", "name=Ada", cwd=project, stdin='{"name": 1}'
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Hello Ada!" in out  # -i wins over --inputs
    assert "You greet people." in out
    assert "provider   fake" in out
    assert re.search(r"max_tokens\s+1024\s+\(default\)", out)
    for name in ("definition_hash", "profile_hash", "inputs_hash", "rendered_prompt_hash"):
        assert re.search(rf"{name}\s+sha256:[0-9a-f]{{64}}", out), name
    assert re.search(r"request_hash\s+sha256:[0-9a-f]{64}", out)


def test_list_shows_every_prompt_and_profile(project: Path) -> None:
    done = scriptorium("list", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    ids = [p["id"] for p in listing["prompts"]]
    assert ids == sorted(ids)
    assert {"greet", "json/answer", "remote", "withdoc"} <= set(ids)
    profiles = {p["name"]: p for p in listing["profiles"]}
    assert profiles["claude"]["api_key_env"] == "ANTHROPIC_API_KEY"
    assert profiles["offline"]["provider"] == "fake"


def test_verify_proves_a_fake_profile_without_a_request(project: Path) -> None:
    done = scriptorium("verify", "-p", "offline", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True


def test_the_bundled_examples_pass_check() -> None:
    """`scriptorium check` is clean on the prompts/ and profiles/ shipped in the repository."""
    done = scriptorium("check", cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("ok: ")


def test_the_readme_main_job_runs_offline() -> None:
    """The README's first command (after installing) gives valid output with no key."""
    done = scriptorium(
        "run", "extract/contact", "-p", "offline", "-a", "document=examples/contact.txt",
        "--json", cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["validation"]["valid"] is True
    assert result["validation"]["value"]["name"] == "Ada Lovelace"


BROKEN_FILES = {
    "prompts/ok.prompt.md": (
        "---\nprofile: good\ninputs:\n  type: object\n  properties: {name: {type: string}}\n---\n"
        "Hi {{ name }}\n"
    ),
    "prompts/frontmatter.prompt.md": "---\nunknown_key: 1\n---\nHi\n",
    "prompts/syntax.prompt.md": "---\nprofile: good\n---\nHi {{ name \n",
    "prompts/variables.prompt.md": (
        "---\nprofile: good\ninputs:\n  type: object\n  properties: {used: {}, unused: {}}\n"
        "---\n{{ used }} {{ stray }}\n"
    ),
    "prompts/artifact.prompt.md": "---\nprofile: good\n---\n{{ artifacts.report.text }}\n",
    "prompts/noschema.prompt.md": (
        "---\nprofile: good\noutput: {format: json_schema, schema: missing.json}\n---\nHi\n"
    ),
    "prompts/badschema.prompt.md": (
        "---\nprofile: good\noutput:\n  format: json_schema\n  schema: {type: 12}\n---\nHi\n"
    ),
    "prompts/orphan.prompt.md": "---\nprofile: nowhere\n---\nHi\n",
    "prompts/leaky.prompt.md": (
        "---\nprofile: good\n---\nUse sk-ant-api03-abcdefghijklmnopqrstuvwx to call.\n"
    ),
    "profiles/good.yaml": "provider: fake\noptions: {responses: [ok]}\n",
    "profiles/broken.yaml": "provider: fake\nnot_a_field: 1\n",
    "profiles/pasted.yaml": (
        "provider: anthropic\nmodel: m\noptions:\n  headers: {x-key: sk-ant-api03-abcdefghijklmnopqrstuvwx}\n"
    ),
}


def test_check_reports_each_kind_of_problem_and_exits_one(tmp_path: Path) -> None:
    write_files(tmp_path, BROKEN_FILES)
    done = scriptorium("check", "--format", "json", cwd=tmp_path)
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["ok"] is False
    found = {(p["file"], p["kind"]) for p in report["problems"]}
    assert found == {
        ("prompts/frontmatter.prompt.md", "prompt_invalid"),
        ("prompts/syntax.prompt.md", "template_syntax"),
        ("prompts/variables.prompt.md", "undeclared_variable"),
        ("prompts/variables.prompt.md", "unused_input"),
        ("prompts/artifact.prompt.md", "undeclared_artifact"),
        ("prompts/noschema.prompt.md", "schema_invalid"),
        ("prompts/badschema.prompt.md", "schema_invalid"),
        ("prompts/orphan.prompt.md", "profile_missing"),
        ("prompts/leaky.prompt.md", "secret_in_prompt"),
        ("profiles/broken.yaml", "profile_invalid"),
        ("profiles/pasted.yaml", "secret_in_profile"),
    }
    assert "sk-ant-api03" not in done.stdout + done.stderr
    assert json.loads(only_error_line(done.stderr))["error"]["code"] == "check_failed"


def test_check_text_is_one_problem_per_line_with_file_and_reason(tmp_path: Path) -> None:
    write_files(
        tmp_path, {k: v for k, v in BROKEN_FILES.items() if "variables" in k or "good" in k}
    )
    done = scriptorium("check", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "prompts/variables.prompt.md: undeclared_variable: template user[0] uses 'stray', "
        "but inputs does not declare it (add it to inputs.properties)",
        "prompts/variables.prompt.md: unused_input: inputs declares 'unused' but no template "
        "uses it",
    ]
    assert only_error_line(done.stderr) == "scriptorium: check_failed: 2 problems found"


# --- batch ------------------------------------------------------------------------------------


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_batch_writes_results_and_errors_in_input_order(project: Path, tmp_path: Path) -> None:
    lines = [
        {"id": "a", "inputs": {"name": "Ann"}},
        "this is not json",
        {"id": "c", "inputs": {}},
        {"id": "d", "inputs": {"name": "Dee"}},
        {"id": "e", "inputs": {"name": "Eve"}},
    ]
    source = tmp_path / "in.jsonl"
    source.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    done = scriptorium(
        "batch", "greet", "--in", str(source), "--out", str(out), "--concurrency", "3",
        cwd=project,
    )  # fmt: skip
    assert done.returncode == 1  # two lines failed
    # stderr is not a terminal: no progress, only the one summary error line.
    assert "\r" not in done.stderr
    assert only_error_line(done.stderr).startswith("scriptorium: batch_failed: 2 of 5 lines")
    records = read_jsonl(out)
    assert [r["line"] for r in records] == [1, 2, 3, 4, 5]
    assert [r["id"] for r in records] == ["a", None, "c", "d", "e"]
    assert [("error" in r) for r in records] == [False, True, True, False, False]
    assert records[1]["error"]["code"] == "invalid_request"
    assert records[2]["error"]["code"] == "invalid_request"
    for record, name in zip(
        [records[0], records[3], records[4]], ["Ann", "Dee", "Eve"], strict=True
    ):
        assert record["result"]["prepared"]["messages"][0]["content"] == f"Hello {name}!"
        assert record["request_hash"] == record["result"]["prepared"]["request_hash"]


def test_batch_resumes_lines_that_already_have_a_result(project: Path, tmp_path: Path) -> None:
    """A second run copies earlier results (same run ids) and runs only what is new or failed."""
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    first = [{"inputs": {"name": "Ann"}}, {"inputs": {"name": "Bob"}}, {"inputs": {}}]
    source.write_text("\n".join(json.dumps(x) for x in first) + "\n", encoding="utf-8")
    done = scriptorium("batch", "greet", "--in", str(source), "--out", str(out), cwd=project)
    assert done.returncode == 1
    before = read_jsonl(out)

    second = [first[0], {"inputs": {"name": "Cy"}}, first[1], {"inputs": {"name": "Dee"}}]
    source.write_text("\n".join(json.dumps(x) for x in second) + "\n", encoding="utf-8")
    done = scriptorium(
        "batch", "greet", "--in", str(source), "--out", str(out), "--json", cwd=project
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["lines"], summary["resumed"], summary["ok"]) == (4, 2, 4)
    after = read_jsonl(out)
    assert [r["line"] for r in after] == [1, 2, 3, 4]
    assert after[0]["result"]["run_id"] == before[0]["result"]["run_id"]
    assert after[2]["result"]["run_id"] == before[1]["result"]["run_id"]
    assert after[1]["result"]["run_id"] not in {r["result"]["run_id"] for r in before[:2]}
    assert not (tmp_path / "out.jsonl.partial").exists()


def test_the_installed_console_script_runs() -> None:
    """`pip install -e .` puts a working `scriptorium` next to the interpreter."""
    script = Path(sys.executable).with_name("scriptorium")
    found = str(script) if script.exists() else shutil.which("scriptorium")
    if found is None:
        pytest.skip("the scriptorium console script is not installed here (pip install -e .)")
    done = subprocess.run(
        [found, "list", "--root", str(REPO)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=cli_env(),
    )
    assert done.returncode == 0, done.stderr
    assert "extract/contact" in done.stdout
