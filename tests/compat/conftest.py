"""The LiteLLM proxy as a real process on loopback, for the compatibility suite.

LiteLLM is not a dependency of scriptorium: it lives in a virtual environment of its own (``make
compat-env``; ``.ci/run`` makes it), pinned to one version (``requirements-litellm.txt``). The
suite finds its ``litellm`` command through :data:`LITELLM_ENV` (the Makefile sets it) and skips,
saying why, when it is not there.

One proxy per session serves every test: mock models only (LiteLLM's ``mock_response`` and
``mock_tool_calls``), both its OpenAI route (``/v1/chat/completions``) and its Anthropic route
(``/v1/messages``), on 127.0.0.1 at a free port. Every model's ``api_base`` is a closed loopback
port and the model price map is LiteLLM's local copy, so nothing ever leaves the machine.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

#: The variable naming the ``litellm`` command of the compatibility environment.
LITELLM_ENV = "SCRIPTORIUM_LITELLM"
#: The proxy's master key: what scriptorium's profiles send as their key (a test value).
MASTER_KEY = "sk-compat-master-key-not-a-secret"
KEY_ENV = "COMPAT_GATEWAY_KEY"
#: Where every model would forward to if it did not mock: a closed port on loopback.
NOWHERE = "http://127.0.0.1:9"
START_TIMEOUT_S = 90.0

LABEL = '{"label": "positive", "confidence": 0.9}'
TEXT = "Hello from the gateway"


def _model(name: str, model: str, **params: Any) -> dict[str, Any]:
    return {
        "model_name": name,
        "litellm_params": {"model": model, "api_key": "unused", "api_base": NOWHERE, **params},
    }


def _tool_call(arguments: str) -> list[dict[str, Any]]:
    return [
        {
            "id": "call_compat",
            "type": "function",
            "function": {"name": "label", "arguments": arguments},
        }
    ]


#: The proxy's models: each route gets text, JSON, and LiteLLM's error translations.
MODELS = [
    _model("gpt-text", "openai/gpt-4o-mini", mock_response=TEXT),
    _model("gpt-json", "openai/gpt-4o-mini", mock_response=LABEL),
    _model("gpt-tool", "openai/gpt-4o-mini", mock_tool_calls=_tool_call(LABEL)),
    _model("gpt-429", "openai/gpt-4o-mini", mock_response="litellm.RateLimitError"),
    _model("gpt-500", "openai/gpt-4o-mini", mock_response="litellm.InternalServerError"),
    _model("claude-text", "anthropic/claude-sonnet-4-5", mock_response=TEXT),
    _model("claude-json", "anthropic/claude-sonnet-4-5", mock_response=LABEL),
    _model("claude-429", "anthropic/claude-sonnet-4-5", mock_response="litellm.RateLimitError"),
    _model(
        "claude-500", "anthropic/claude-sonnet-4-5", mock_response="litellm.InternalServerError"
    ),
]


@dataclass(frozen=True)
class Gateway:
    """A running proxy: its base URL (no path) and the project pointed at it."""

    url: str
    root: Path


def _litellm() -> str:
    command = os.environ.get(LITELLM_ENV, "")
    if not command:
        pytest.skip(
            f"the LiteLLM proxy is not installed: run 'make compat-env' (or set {LITELLM_ENV} "
            "to a litellm command) to run the compatibility suite"
        )
    found = shutil.which(command)
    if found is None:
        pytest.skip(f"{LITELLM_ENV}={command} is not an executable: run 'make compat-env'")
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the LiteLLM proxy exited ({process.returncode}): {_tail(log)}")
        try:
            with urllib.request.urlopen(f"{url}/health/liveliness", timeout=2):  # noqa: S310
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.25)
    raise RuntimeError(f"the LiteLLM proxy did not start in {START_TIMEOUT_S:g}s: {_tail(log)}")


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"


def _proxy_env(home: Path) -> dict[str, str]:
    """The proxy's environment: nothing of ours (no key of any provider), the price map read
    from its own package, no telemetry."""
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        HOME=str(home),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_LOG="ERROR",
        LITELLM_TELEMETRY="False",
        NO_PROXY="*",
    )
    return env


def _write_project(root: Path, url: str) -> None:
    (root / "prompts" / "label").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "greet.prompt.md").write_text(
        "---\nprofile: gpt\n---\n## user\nSay hello.\n", encoding="utf-8"
    )
    schema = {
        "type": "object",
        "required": ["label", "confidence"],
        "additionalProperties": False,
        "properties": {
            "label": {"enum": ["positive", "negative"]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
    }
    for strategy in ("native", "tool", "prompt"):
        (root / "prompts" / "label" / f"{strategy}.prompt.md").write_text(
            "---\nprofile: gpt\noutput:\n  format: json_schema\n"
            f"  schema: {json.dumps(schema)}\n  strategy: {strategy}\n---\n"
            "## user\nLabel the sentiment of: {{ text }}\n"
            "",
            encoding="utf-8",
        )
    (root / "profiles" / "gpt.yaml").write_text(
        f"provider: openai\nmodel: gpt-text\nendpoint: {url}/v1\napi_key_env: {KEY_ENV}\n",
        encoding="utf-8",
    )
    (root / "profiles" / "claude.yaml").write_text(
        f"provider: anthropic\nmodel: claude-text\nendpoint: {url}\napi_key_env: {KEY_ENV}\n",
        encoding="utf-8",
    )


@pytest.fixture(scope="session")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """The LiteLLM proxy on a free loopback port, and a project whose profiles point at it."""
    command = _litellm()
    where = tmp_path_factory.mktemp("litellm")
    config = where / "config.yaml"
    config.write_text(
        json.dumps(  # JSON is YAML: the config is written without a YAML library
            {
                "model_list": MODELS,
                "litellm_settings": {"num_retries": 0, "telemetry": False},
                "general_settings": {"master_key": MASTER_KEY},
            }
        ),
        encoding="utf-8",
    )
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = where / "proxy.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [command, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_proxy_env(where),
            cwd=where,
        )
    try:
        _wait_until_up(url, process, log)
        root = where / "project"
        _write_project(root, url)
        yield Gateway(url=url, root=root)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
