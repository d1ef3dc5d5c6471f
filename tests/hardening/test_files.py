"""Faults 5 and 6: every file is read one bounded, regular-file-only way (FIFOs and devices are
refused without blocking), and replay cassettes stay inside the project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scriptorium import Engine
from scriptorium._files import FileProblem, read_named_file
from scriptorium.errors import (
    InvalidRequestError,
    LLMGenerateError,
    ProfileLoadError,
    ProfileRequiredError,
    PromptLoadError,
    ScriptoriumError,
    ValidationError,
)
from scriptorium.llm.replay import cassette_location
from tests.hardening.isolated import TIMEOUT_S, run_isolated

PROMPT = "---\nprofile: p\noutput: {format: json_schema, schema: s.json}\n---\nhi\n"


def project(root: Path, profile: str = "provider: fake\nmodel: m\n") -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "p.prompt.md").write_text(PROMPT)
    (root / "prompts" / "s.json").write_text('{"type": "object"}')
    (root / "profiles" / "p.yaml").write_text(profile)
    return root


def replace_with_fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def test_fifo_schema_prompt_and_profile_are_refused_not_waited_on(tmp_path: Path) -> None:
    """prepare and check meet FIFOs where files belong and report them, in a child that would
    hang if anything blocked on one."""
    root = project(tmp_path)
    replace_with_fifo(root / "prompts" / "s.json")
    (root / "prompts" / "q.prompt.md").write_text(PROMPT.replace("profile: p", "profile: f"))
    os.mkfifo(root / "prompts" / "fifo.prompt.md")
    os.mkfifo(root / "profiles" / "f.yaml")
    out = run_isolated(
        f"""
        from scriptorium import Engine
        from scriptorium.errors import ScriptoriumError
        engine = Engine({str(root)!r})
        for prompt in ("p", "q", "fifo"):
            try:
                engine.prepare(prompt)
            except ScriptoriumError as err:
                print(prompt, err.code, err.message)
        for problem in engine.check():
            print("check", problem)
        """
    )
    assert "p validation schema s.json is not a regular file" in out
    assert "q profile_load" in out
    assert "fifo prompt_load" in out
    assert "check prompts/fifo.prompt.md: prompt_invalid" in out
    assert "check profiles/f.yaml: profile_invalid" in out
    assert "check prompts/p.prompt.md: schema_invalid" in out


def test_a_fifo_cassette_is_refused_not_waited_on(tmp_path: Path) -> None:
    """A replay cassette that is a FIFO is a config error, not a hang."""
    root = project(tmp_path, "provider: replay\nmodel: m\noptions: {cassette: ../c.jsonl}\n")
    os.mkfifo(root / "c.jsonl")
    out = run_isolated(
        f"""
        from scriptorium import Engine
        from scriptorium.errors import LLMGenerateError
        try:
            Engine({str(root)!r}).run("p")
        except LLMGenerateError as err:
            print(err.reason, err.message)
        """
    )
    assert out.startswith("config ")
    assert "not a regular file" in out


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/null"])
def test_inputs_and_cassettes_that_are_devices_are_refused(tmp_path: Path, target: str) -> None:
    """``--inputs /dev/zero`` and a cassette linked to a device fail at once, in bounded memory."""
    root = project(tmp_path, "provider: replay\nmodel: m\noptions: {cassette: ../c.jsonl}\n")
    (root / "c.jsonl").symlink_to(target)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cli = [sys.executable, "-m", "scriptorium", "run", "p", "--root", str(root)]
    done = subprocess.run(
        [*cli, "--inputs", target], capture_output=True, text=True, timeout=TIMEOUT_S, env=env
    )
    assert done.returncode == 2, done.stderr
    assert "not a regular file" in done.stderr
    done = subprocess.run(cli, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    assert done.returncode == 6, done.stderr
    assert "replay provider" in done.stderr


@pytest.mark.parametrize(
    "cassette", ["/tmp/cassette.jsonl", "../../cassette.jsonl", "../..", "a/../../../x.jsonl"]
)
def test_cassettes_outside_the_project_are_refused_before_any_file_is_touched(
    tmp_path: Path, cassette: str
) -> None:
    """record mode neither creates directories nor appends outside; replay reads nothing there;
    check reports the profile."""
    root = project(
        tmp_path / "project",
        "provider: replay\nmodel: m\n"
        f"options: {{cassette: {json.dumps(cassette)}, mode: record, record_provider: fake,"
        " responses: ['{}']}\n",
    )
    engine = Engine(root)
    with pytest.raises(LLMGenerateError) as caught:
        engine.run("p")
    assert caught.value.reason == "config"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["project"]
    assert any(
        p.kind == "profile_invalid" and "cassette" in p.message and p.file == "profiles/p.yaml"
        for p in engine.check()
    )


def test_a_cassette_directory_linked_outside_is_refused(tmp_path: Path) -> None:
    """A symlinked folder on the cassette's path may not lead the recording outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    root = project(
        tmp_path / "project",
        "provider: replay\nmodel: m\n"
        "options: {cassette: ../tapes/new/c.jsonl, mode: record, record_provider: fake,"
        " responses: ['{}']}\n",
    )
    (root / "tapes").symlink_to(outside)
    with pytest.raises(LLMGenerateError, match="outside the project"):
        Engine(root).run("p")
    assert list(outside.iterdir()) == []


def test_a_cassette_inside_the_project_still_records_and_replays(tmp_path: Path) -> None:
    """The documented layout (``../tests/cassettes/...`` from profiles/) keeps working."""
    root = project(
        tmp_path,
        "provider: replay\nmodel: m\n"
        "options: {cassette: ../tests/cassettes/c.jsonl, mode: record, record_provider: fake,"
        " responses: ['{}']}\n",
    )
    assert Engine(root).run("p").validation.valid
    (root / "profiles" / "p.yaml").write_text(
        "provider: replay\nmodel: m\noptions: {cassette: ../tests/cassettes/c.jsonl}\n"
    )
    assert Engine(root).run("p").output.text == "{}"


def test_cassette_location_is_relative_to_the_project_holding_the_profile(tmp_path: Path) -> None:
    """The path is resolved against the profile's folder and kept relative to the project."""
    source = str(tmp_path / "profiles" / "p.yaml")
    assert cassette_location("../t/c.jsonl", source) == (tmp_path, "t/c.jsonl")
    assert cassette_location("c.jsonl", source) == (tmp_path, "profiles/c.jsonl")
    for bad in ("", "a\x00b", "/abs", "C:/x", "../../x"):
        with pytest.raises(LLMGenerateError):
            cassette_location(bad, source)


def test_schema_errors_name_relative_paths_only(tmp_path: Path) -> None:
    """No message about a schema file holds the absolute project path."""
    root = project(tmp_path)
    (root / "prompts" / "s.json").unlink()
    with pytest.raises(ValidationError) as caught:
        Engine(root).prepare("p")
    assert str(tmp_path) not in caught.value.message
    (root / "prompts" / "s.json").symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text("{}")
    with pytest.raises(ValidationError) as caught:
        Engine(root).prepare("p")
    assert str(tmp_path) not in caught.value.message
    assert "outside" in caught.value.message


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.binary(max_size=400),
    where=st.sampled_from(["prompts/p.prompt.md", "prompts/s.json", "profiles/p.yaml"]),
)
def test_any_bytes_in_any_file_give_a_sentinel(tmp_path: Path, data: bytes, where: str) -> None:
    """Whatever bytes a prompt, schema or profile file holds, prepare succeeds or raises the
    sentinel of that file's kind, never another exception."""
    root = tmp_path / f"case{abs(hash((data, where)))}"
    if root.exists():
        return  # the same example again (hypothesis replays some)
    project(root)
    (root / where).write_bytes(data)
    expected = {"prompts/p.prompt.md": PromptLoadError, "prompts/s.json": ValidationError}.get(
        where, ProfileLoadError
    )
    failure: ScriptoriumError | None = None
    try:
        Engine(root).prepare("p")
    except ScriptoriumError as err:
        failure = err
    # A prompt that loads may still name no profile: a sentinel of the flow, not a crash.
    allowed = expected | InvalidRequestError | ProfileRequiredError
    assert failure is None or isinstance(failure, allowed), failure


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=300))
def test_any_bytes_as_inputs_or_cassette_give_a_sentinel(tmp_path: Path, data: bytes) -> None:
    """An inputs file or a cassette with any bytes is read or refused with the right sentinel."""
    from scriptorium.cli.commands import read_inputs

    path = tmp_path / "f.bin"
    path.write_bytes(data)
    try:
        read_inputs(str(path))
    except InvalidRequestError:
        pass
    assert read_named_file(path, max_bytes=1000, label="f") == data
    with pytest.raises(FileProblem):
        read_named_file(path, max_bytes=len(data) - 1, label="f")
    root = tmp_path / "p"
    if not root.exists():
        project(root, "provider: replay\nmodel: m\noptions: {cassette: ../c.jsonl}\n")
    (root / "c.jsonl").write_bytes(data)
    reason = None
    try:
        Engine(root).run("p")
    except LLMGenerateError as err:
        reason = err.reason
    assert reason in (None, "config", "replay_miss")
