"""``schemathesis run --checks all`` against ``scriptorium serve`` on a real uvicorn over loopback:
every answer is one the OpenAPI document describes, no request the document allows is refused for
a reason it does not state (the prompt id's pattern, a key or endpoint this server does not take,
base64 that does not decode), and no request it forbids is accepted.

The served project is the bundled prompts with their offline profiles only, so no answer can be a
5xx that the document would have to call a configuration error. The default run has a small
smoke variant; the full one (every phase, more examples, with and without a token) is slow.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.test_cli import closed_port
from tests.e2e.test_serve import SERVE, serve_env, wait_until_up

REPO = Path(__file__).resolve().parents[2]
TOKEN = "schemathesis-token-4c1d2e3f"
SCHEMATHESIS = [sys.executable, "-m", "schemathesis.cli", "run"]


@dataclass
class Served:
    url: str
    token: str | None
    workdir: Path


def _project(root: Path) -> Path:
    shutil.copytree(REPO / "prompts", root / "prompts")
    (root / "profiles").mkdir()
    for profile in (REPO / "profiles").glob("offline*.yaml"):
        shutil.copy(profile, root / "profiles" / profile.name)
    return root


@pytest.fixture(scope="module", params=[None, TOKEN], ids=["open", "token"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    token: str | None = request.param
    project = _project(tmp_path_factory.mktemp("schemathesis"))
    port = closed_port()
    extra = {} if token is None else {"SCRIPTORIUM_HTTP_TOKEN": token}
    # The access log goes to a file: thousands of lines would fill a pipe nobody reads, and the
    # server would block writing them.
    log = (project / "serve.log").open("w", encoding="utf-8")
    process = subprocess.Popen(
        [*SERVE, "--root", str(project), "--port", str(port)],
        env=serve_env(**extra),
        stdout=log,
        stderr=log,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_up(url, process)
        yield Served(url, token, project)
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def _schemathesis(served: Served, *options: str) -> subprocess.CompletedProcess[str]:
    argv = [*SCHEMATHESIS, f"{served.url}/openapi.json", "--checks", "all", "-w", "1", *options]
    if served.token is not None:
        argv += ["-H", f"Authorization: Bearer {served.token}"]
    # Its own directory: schemathesis keeps a cache where it runs.
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=600, check=False, cwd=served.workdir
    )


def _assert_clean(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert " passed" in done.stdout


def test_schemathesis_checks_all_pass_at_smoke_size(served: Served) -> None:
    if served.token is not None:
        pytest.skip("the token variant runs with the full suite (slow)")
    _assert_clean(
        _schemathesis(served, "--max-examples", "8", "--phases", "coverage,fuzzing", "--seed", "25")
    )


@pytest.mark.slow
def test_schemathesis_checks_all_pass_in_every_phase(served: Served) -> None:
    _assert_clean(_schemathesis(served, "--max-examples", "150"))
