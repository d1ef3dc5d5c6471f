"""The smaller faults: OpenAI and Anthropic responses with broken usage or non-text parts,
an invalid max_tokens_field, engine roots that are no paths, the kernel's ending under a second
SIGTERM, and check reporting links that lead out of the project."""

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
from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium._testing.openai_server import FakeOpenAIServer, completion_body
from scriptorium.errors import InvalidRequestError, LLMGenerateError
from scriptorium.llm.anthropic import AnthropicClient
from scriptorium.llm.model import LLMRequest, StructuredOutput, Target
from scriptorium.llm.openai import OpenAIClient
from scriptorium.llm.retry import RetryHooks
from scriptorium.prompt.model import Message

REPO = Path(__file__).resolve().parents[2]
HOOKS = RetryHooks(sleep=lambda s: None, jitter=lambda low, high: 1.0)


@pytest.fixture(scope="module")
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def openai_client() -> Iterator[OpenAIClient]:
    client = OpenAIClient(hooks=HOOKS)
    yield client
    client.close()


def openai_request(
    server: FakeOpenAIServer, *, strategy: str | None = None, **options: Any
) -> LLMRequest:
    structured = None
    if strategy is not None:
        schema = {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "required": ["a"],
            "additionalProperties": False,
        }
        structured = StructuredOutput(schema_=schema, name="out", strategy=strategy)
    return LLMRequest(
        target=Target(provider="openai", model="gpt-4o-mini", endpoint=server.url),
        api_key="sk-test-0000000000000000",
        messages=(Message(role="user", content="hi"),),
        structured_output=structured,
        options=options,
    )


def reply_with(server: FakeOpenAIServer, message: dict[str, Any], usage: Any) -> None:
    body = completion_body(message, model="gpt-4o-mini", finish_reason="stop", usage=usage)
    server.reply_json(body)


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -5, "completion_tokens": 3},
        {"prompt_tokens": 5.5, "completion_tokens": 3},
        {"prompt_tokens": 5, "completion_tokens": "3"},
        {"prompt_tokens": 5, "completion_tokens": True},
        {
            "prompt_tokens": 5,
            "completion_tokens": 3,
            "prompt_tokens_details": {"cached_tokens": -1},
        },
    ],
)
def test_openai_usage_that_is_not_a_count_is_invalid_response(
    openai_server: FakeOpenAIServer, openai_client: OpenAIClient, usage: dict[str, Any]
) -> None:
    """Negative, fractional, text or boolean token counts are a broken response, not 0 tokens."""
    openai_server.clear()
    reply_with(openai_server, {"role": "assistant", "content": "ok"}, usage)
    with pytest.raises(LLMGenerateError) as caught:
        openai_client.generate(openai_request(openai_server))
    assert caught.value.reason == "invalid_response"


@pytest.mark.parametrize(
    "message",
    [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"function": {"arguments": {"a": 1}}}],
        },
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"arguments": 7}}]},
        {"role": "assistant", "content": "x", "tool_calls": {"function": {"arguments": "{}"}}},
        {"role": "assistant", "content": ["a", "b"]},
        {"role": "assistant", "content": "x", "refusal": {"why": "no"}},
    ],
)
def test_openai_non_text_parts_are_invalid_response(
    openai_server: FakeOpenAIServer, openai_client: OpenAIClient, message: dict[str, Any]
) -> None:
    """Tool arguments, content or refusals that are not text never become empty text."""
    openai_server.clear()
    reply_with(openai_server, message, {"prompt_tokens": 1, "completion_tokens": 1})
    with pytest.raises(LLMGenerateError) as caught:
        openai_client.generate(openai_request(openai_server, strategy="tool"))
    assert caught.value.reason == "invalid_response"


def test_an_unknown_max_tokens_field_is_a_config_error(
    openai_server: FakeOpenAIServer, openai_client: OpenAIClient
) -> None:
    """A typo in options.max_tokens_field is refused before any request is sent."""
    openai_server.clear()
    with pytest.raises(LLMGenerateError) as caught:
        openai_client.generate(openai_request(openai_server, max_tokens_field="max_token"))
    assert caught.value.reason == "config"
    assert openai_server.requests == []


def test_an_anthropic_text_block_without_text_is_invalid_response() -> None:
    """A text block whose text is not a string is a broken response, not empty text."""
    with FakeAnthropicServer() as server, AnthropicClient(hooks=HOOKS) as client:
        server.reply_json(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [{"type": "text", "text": {"oops": 1}}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        )
        request = LLMRequest(
            target=Target(
                provider="anthropic", model="claude-sonnet-4-6", endpoint=server.base_url
            ),
            api_key="sk-ant-test-000000000000",
            messages=(Message(role="user", content="hi"),),
        )
        with pytest.raises(LLMGenerateError) as caught:
            client.generate(request)
    assert caught.value.reason == "invalid_response"


@pytest.mark.parametrize("root", [None, "pro\x00ject", b"bytes", 42])
def test_engine_roots_that_are_no_paths_are_invalid_requests(root: Any) -> None:
    """Engine(None), a NUL in the root, bytes or numbers: InvalidRequestError naming the field."""
    with pytest.raises(InvalidRequestError) as caught:
        Engine(root)
    assert caught.value.field == "root"
    if root is not None:  # None is artifact_root's default (the root itself)
        with pytest.raises(InvalidRequestError):
            Engine(".", artifact_root=root)


# The kernel with a second SIGTERM arriving exactly while it writes its ending (the supervisor's
# impatience made deterministic: the process signals itself as the exit line is written).
IMPATIENT_KERNEL = [
    sys.executable,
    "-c",
    "import os, runpy, signal\n"
    "from scriptorium.kernel import protocol\n"
    "exit_line = protocol.Emitter.exit\n"
    "def impatient(self, *args, **kwargs):\n"
    "    os.kill(os.getpid(), signal.SIGTERM)\n"
    "    os.kill(os.getpid(), signal.SIGTERM)\n"
    "    return exit_line(self, *args, **kwargs)\n"
    "protocol.Emitter.exit = impatient\n"
    "runpy.run_module('scriptorium.kernel', run_name='__main__', alter_sys=True)\n",
]


def test_signals_while_the_kernel_writes_its_ending_change_nothing() -> None:
    """The run completes with its exit line and code 0; no traceback, no exit 143."""
    mock = {"text": "done", "tokens_input": 1, "tokens_output": 1, "cost_micro": 1}
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(REPO),
        "CC_LLM_PROVIDER": "mock",
        "CC_LLM_MOCK_RESPONSE_JSON": json.dumps(mock),
    }
    init = {"op": "init", "payload": {"model": "m", "user": "hi"}}
    done = subprocess.run(
        IMPATIENT_KERNEL,
        input=json.dumps(init).encode() + b"\n",
        capture_output=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    lines = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert done.returncode == 0, done.stderr.decode()
    assert lines[-1]["op"] == "exit"
    assert lines[-1]["exit_kind"] == "completed"
    assert b"Traceback" not in done.stderr


def test_check_reports_prompts_and_profiles_linked_out_of_the_project(tmp_path: Path) -> None:
    """A symlinked prompt, prompt folder or profile leading outside is reported, not skipped."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.prompt.md").write_text("hi")
    (outside / "z.yaml").write_text("provider: fake\n")
    root = tmp_path / "project"
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "o.prompt.md").symlink_to(outside / "o.prompt.md")
    (root / "prompts" / "linked").symlink_to(outside)
    (root / "prompts" / "gone.prompt.md").symlink_to(tmp_path / "missing")
    (root / "profiles" / "z.yaml").symlink_to(outside / "z.yaml")
    found = {(p.file, p.kind) for p in Engine(root).check()}
    assert {
        ("prompts/o.prompt.md", "link_outside"),
        ("prompts/linked", "link_outside"),
        ("prompts/gone.prompt.md", "link_outside"),
        ("profiles/z.yaml", "link_outside"),
    } <= found


@pytest.mark.parametrize("second", ["at_once", "until_it_ends"])
def test_two_quick_sigterms_during_a_call_end_with_one_failed_exit(second: str) -> None:
    """A supervisor that signals twice (or again and again) gets a failed exit line and code 1:
    a later signal cannot interrupt the writing of the ending the first one asked for, nor kill
    the process once the ending is written (the interpreter's shutdown would have put the default
    handler back: a signal arriving then ended the process with -SIGTERM)."""
    with FakeAnthropicServer() as server:
        server.delay(30.0)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(REPO),
            "CC_LLM_PROVIDER": "anthropic",
            "ANTHROPIC_API_KEY": "sk-ant-test-0000000000000",
            "ANTHROPIC_BASE_URL": server.base_url,
        }
        init = {"op": "init", "payload": {"model": "claude-sonnet-4-6", "user": "hi"}}
        with subprocess.Popen(
            [sys.executable, "-m", "scriptorium.kernel"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=REPO,
        ) as proc:
            assert proc.stdin is not None
            assert proc.stdout is not None
            proc.stdin.write(json.dumps(init).encode() + b"\n")
            proc.stdin.flush()
            while json.loads(proc.stdout.readline())["op"] != "iteration_start":
                pass
            proc.send_signal(signal.SIGTERM)
            rest: list[dict[str, Any]] = []
            if second == "until_it_ends":  # after the exit line, into the process's last moments
                while not rest or rest[-1]["op"] != "exit":
                    rest.append(json.loads(proc.stdout.readline()))
                while proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    time.sleep(0.002)
            else:
                proc.send_signal(signal.SIGTERM)
            rest += [json.loads(line) for line in proc.stdout]
            _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, (rest, stderr.decode())
    assert rest[-1]["op"] == "exit", rest
    assert rest[-1]["exit_kind"] == "failed"
    # A second signal escaping the ending would surface as an uncaught KeyboardInterrupt. (The
    # first may interrupt the SDK mid-construction, whose half-built client then complains on
    # stderr when collected: noise outside the protocol, so not checked here.)
    assert b"KeyboardInterrupt" not in stderr
