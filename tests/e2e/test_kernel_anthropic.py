"""The kernel with ``CC_LLM_PROVIDER=anthropic``: the real SDK in a real subprocess, against the
loopback ``FakeAnthropicServer``.

Importing the SDK costs a kernel seconds, so the three kernels of this module are started
together once (a module fixture) and each test reads its own transcript.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from scriptorium.llm.model import Usage
from scriptorium.llm.pricing import cost_micro
from scriptorium.testing import FakeAnthropicServer
from tests.e2e.test_kernel import RAW, Finished, init_line, kernel_env, run_kernel

KEY = "sk-ant-kernel-test-0123456789"
MODEL = RAW["model"]
USAGE = {"input_tokens": 12, "output_tokens": 3, "cache_read_input_tokens": 5}
PROMPT = """---
profile: offline
---
## user
Say hello to {{ name }}.
"""


@dataclass(frozen=True)
class Transcripts:
    rejected: Finished
    raw: Finished
    prompt: Finished
    raw_server: FakeAnthropicServer
    prompt_server: FakeAnthropicServer


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Transcripts]:
    """A 401, a raw success and a prompt-run success, each against its own loopback server."""
    project = _project(tmp_path_factory.mktemp("kernel-anthropic"))
    with (
        FakeAnthropicServer() as rejecting,
        FakeAnthropicServer() as raw_server,
        FakeAnthropicServer() as prompt_server,
    ):
        rejecting.fail(401)
        raw_server.reply("Approve the budget.", usage=USAGE)
        prompt_server.reply("Hello, Ada!", usage=USAGE)
        jobs = [
            (rejecting.url, init_line(RAW)),
            (raw_server.url, init_line(RAW)),
            (
                prompt_server.url,
                init_line(
                    {
                        "prompt_id": "hello",
                        "inputs": {"name": "Ada"},
                        "overrides": {"model": MODEL},
                        "root": str(project),
                    }
                ),
            ),
        ]

        def one(job: tuple[str, bytes]) -> Finished:
            url, stdin = job
            env = kernel_env(
                CC_LLM_PROVIDER="anthropic", ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=url
            )
            return run_kernel(env, stdin)

        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            rejected, raw, prompt = pool.map(one, jobs)
        yield Transcripts(rejected, raw, prompt, raw_server, prompt_server)


def _project(root: Path) -> Path:
    (root / "prompts").mkdir()
    (root / "profiles").mkdir()
    (root / "prompts" / "hello.prompt.md").write_text(PROMPT, encoding="utf-8")
    # A keyless offline profile: the anthropic provider brings its own key and endpoint.
    (root / "profiles" / "offline.yaml").write_text(
        "provider: fake\nmodel: fake-1\noptions: {responses: [unused]}\n", encoding="utf-8"
    )
    return root


def _expected_charges() -> tuple[int, int]:
    usage = Usage(**USAGE)
    cost, _ = cost_micro(MODEL, usage)
    return sum(USAGE.values()), cost


def test_a_401_from_the_provider_is_a_failed_exit_with_code_1(transcripts: Transcripts) -> None:
    """The call failed: no charge, an exit line with exit_kind failed and the error, code 1."""
    done = transcripts.rejected
    assert done.returncode == 1, done.stderr
    assert done.ops == ["ready", "iteration_start", "log", "log", "exit"]
    exit_line = done.messages[-1]
    assert exit_line["exit_kind"] == "failed"
    assert exit_line["error"]["code"] == "llm_generate"
    assert exit_line["error"]["reason"] == "auth"
    assert exit_line["error"]["http_status"] == 401
    assert len(exit_line["summary"]) <= 200


def test_a_raw_success_charges_the_usage_the_server_reported(transcripts: Transcripts) -> None:
    """Tokens are input + cache + output; cost_micro is the price table's for the model."""
    done = transcripts.raw
    tokens, cost = _expected_charges()
    assert done.returncode == 0, done.stderr
    assert done.messages[1:] == [
        {"op": "iteration_start", "iter": 1},
        {"op": "log", "level": "info", "msg": f"calling {MODEL}"},
        {"op": "charge", "dim": "tokens", "amount": tokens},
        {"op": "charge", "dim": "cost_micro", "amount": cost},
        {"op": "iteration_done", "iter": 1, "tokens": 0, "cost_micro": 0},
        {"op": "exit", "exit_kind": "completed", "summary": "Approve the budget."},
    ]
    (request,) = transcripts.raw_server.requests
    assert request.body["model"] == MODEL
    assert request.body["max_tokens"] == 1024
    # The payload's temperature (default 0.7) reaches the adapter, which leaves sampling settings
    # out for the current API version; that is the adapter's rule, not the kernel's.
    assert request.body["system"] == RAW["system"]
    assert request.body["messages"] == [{"role": "user", "content": RAW["user"]}]


def test_a_prompt_run_sends_the_rendered_prompt_with_the_env_key_and_base_url(
    transcripts: Transcripts,
) -> None:
    """A prompt run with the anthropic provider: rendered by the Engine, sent to the base URL."""
    done = transcripts.prompt
    tokens, cost = _expected_charges()
    assert done.returncode == 0, done.stderr
    assert [m for m in done.messages if m["op"] == "charge"] == [
        {"op": "charge", "dim": "tokens", "amount": tokens},
        {"op": "charge", "dim": "cost_micro", "amount": cost},
    ]
    assert done.messages[-1] == {"op": "exit", "exit_kind": "completed", "summary": "Hello, Ada!"}
    (request,) = transcripts.prompt_server.requests
    assert request.body["messages"] == [{"role": "user", "content": "Say hello to Ada."}]
    assert KEY in request.headers.values() or f"Bearer {KEY}" in request.headers.values()


def test_the_key_never_reaches_stdout_or_stderr(transcripts: Transcripts) -> None:
    """No line written by any of the kernels carries the key value."""
    for done in (transcripts.rejected, transcripts.raw, transcripts.prompt):
        assert KEY not in json.dumps(done.messages)
        assert KEY not in done.stderr
