"""``scriptorium mcp``'s refusals before it serves: no token off loopback, a token variable that
is unset or is not a variable's name, a bad concurrency, a profile that does not load."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from scriptorium.cli import main
from tests.mcp.project import write_project


@pytest.fixture
def root(tmp_path: Path) -> str:
    return str(write_project(tmp_path))


def test_listening_off_loopback_without_a_token_is_refused(
    root: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["mcp", "--root", root, "--transport", "http", "--host", "0.0.0.0"])
    assert code == 2
    err = capsys.readouterr().err
    assert "refusing to listen on 0.0.0.0 without a token" in err
    assert "--token-env" in err


def test_a_token_variable_that_is_unset_is_refused_naming_it(
    root: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCP_TEST_TOKEN", raising=False)
    code = main(["mcp", "--root", root, "--transport", "http", "--token-env", "MCP_TEST_TOKEN"])
    assert code == 2
    assert "MCP_TEST_TOKEN is unset or empty" in capsys.readouterr().err


def test_a_pasted_token_in_place_of_a_variable_name_is_refused_and_not_shown(
    root: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pasted = "sk-ant-api03-" + "y" * 40
    code = main(["mcp", "--root", root, "--transport", "http", "--token-env", pasted])
    assert code == 2
    err = capsys.readouterr().err
    assert "--token-env" in err
    assert pasted not in err


def test_concurrency_below_one_is_refused(root: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "--root", root, "--concurrency", "0"]) == 2
    assert "--concurrency must be at least 1" in capsys.readouterr().err


def test_a_profile_that_does_not_exist_is_said_at_start(
    root: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "--root", root, "-p", "fkae"]) == 4
    assert "did you mean 'fake'" in capsys.readouterr().err


def test_the_help_names_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "--help"]) == 0
    out = capsys.readouterr().out
    for option in (
        "--root",
        "--profile",
        "--transport",
        "--host",
        "--port",
        "--token-env",
        "--repair",
        "--concurrency",
        "--tools-per-prompt",
    ):
        assert option in out


def test_a_token_over_stdio_is_refused_as_meaningless(
    root: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "--root", root, "--token-env", "SOME_TOKEN"]) == 2
    assert "--token-env is for --transport http" in capsys.readouterr().err


def test_a_port_in_use_exits_1_naming_the_address(
    root: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code = main(["mcp", "--root", root, "--transport", "http", "--port", str(port)])
    assert code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
