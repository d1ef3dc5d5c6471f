"""The canary sweep: one distinctive key, given every way a key can enter a run (a profile's
variable, ``RunRequest.api_key``, the kernel's environment, an HTTP body on a server that allows
client keys), and every error path a provider can take (a refusal that echoes the key back, a
rate limit and a server error that echo it, an HTML 200 quoting it, a reset, a stream cut short,
an error event quoting it), through the real SDK against the loopback server. The key appears in
no output form: messages, reprs, pickles, error chains and tracebacks, log records, HTTP bodies
and headers, server-sent events, kernel lines, result and batch files."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import pickle
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from scriptorium import Engine
from scriptorium._testing.http import RESET, Answer, RecordedRequest
from scriptorium.cli import main
from scriptorium.errors import ScriptoriumError
from scriptorium.httpapi import create_app
from scriptorium.kernel import serve
from scriptorium.llm.retry import RetryHooks
from scriptorium.testing import FakeAnthropicServer
from scriptorium.usecase import RunRequest
from tests.httpapi.project import call

CANARY = "sk-ant-canary-sweep-7Q2x9Lp4Vb1mZ8"
KEY_ENV = "CANARY_SWEEP_KEY"
MODEL = "claude-sonnet-4-6"


def _key_sent(request: RecordedRequest) -> str:
    headers = request.headers
    return headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")


def _echo(status: int, kind: str) -> Callable[[RecordedRequest], Answer]:
    def answer(request: RecordedRequest) -> Answer:
        message = f"key {_key_sent(request)} refused ({kind})"
        body = {"type": "error", "error": {"type": kind, "message": message}}
        headers = {"retry-after": "0"} if status == 429 else {}
        return Answer.json(body, status, headers)

    return answer


def _html(request: RecordedRequest) -> Answer:
    page = f"<html><body>proxy error for {_key_sent(request)}</body></html>".encode()
    return Answer(200, page, content_type="text/html")


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _stream_then(tail: Callable[[str], list[bytes]]) -> Callable[[RecordedRequest], Answer]:
    def answer(request: RecordedRequest) -> Answer:
        start = {
            "type": "message_start",
            "message": {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [],
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        }
        block = {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": ""},
        }
        delta = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Hello"},
        }
        parts = [
            _sse("message_start", start),
            _sse("content_block_start", block),
            _sse("content_block_delta", delta),
            *tail(_key_sent(request)),
        ]
        return Answer(parts=tuple((0.0, p) for p in parts), content_type="text/event-stream")

    return answer


FAILURES: dict[str, Callable[[RecordedRequest], Answer]] = {
    "auth-echo": _echo(401, "authentication_error"),
    "rate-limit-echo": _echo(429, "rate_limit_error"),
    "server-error-echo": _echo(500, "api_error"),
    "html-200": _html,
    "reset": lambda _request: Answer(reset=True),
    "cut-stream": _stream_then(lambda _key: []),
    "reset-mid-stream": _stream_then(lambda _key: [RESET]),
    "error-event-echo": _stream_then(
        lambda key: [
            _sse(
                "error",
                {"type": "error", "error": {"type": "overloaded_error", "message": f"busy {key}"}},
            )
        ]
    ),
}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


@pytest.fixture
def project(tmp_path: Path, server: FakeAnthropicServer) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "prompts" / "hello.prompt.md").write_text(
        "---\nprofile: claude\n---\nSay hello.\n", encoding="utf-8"
    )
    (tmp_path / "profiles" / "claude.yaml").write_text(
        f"provider: anthropic\nmodel: {MODEL}\nendpoint: {server.url}\napi_key_env: {KEY_ENV}\n"
        "settings: {max_retries: 1, timeout_s: 20}\n",
        encoding="utf-8",
    )
    return tmp_path


class Seen:
    """Every output form gathered from one error path."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def error(self, err: BaseException) -> None:
        self.texts += [str(err), repr(err), "".join(traceback.format_exception(err))]
        self.texts.append(pickle.dumps(err).decode("latin-1"))
        if isinstance(err, ScriptoriumError):
            self.texts.append(json.dumps(err.to_dict(), default=str))
        link: BaseException | None = err
        while link is not None:
            self.texts += [str(link), repr(link)]
            link = link.__cause__ or link.__context__

    def add(self, *texts: str) -> None:
        self.texts.extend(texts)

    def check(self, caplog: pytest.LogCaptureFixture) -> None:
        for record in caplog.records:
            self.texts.append(record.getMessage())
            self.texts.append(json.dumps(record.__dict__, default=str))
            if record.exc_info and record.exc_info[1] is not None:
                # What a handler writes of it: the formatted traceback (a log record's exception
                # object itself is never written anywhere).
                self.texts.append("".join(traceback.format_exception(record.exc_info[1])))
        leaks = [t for t in self.texts if CANARY in t]
        assert not leaks, leaks[0][:500]


def _hooks() -> RetryHooks:
    async def asleep(_seconds: float) -> None:
        return None

    return RetryHooks(sleep=lambda _s: None, asleep=asleep)


def _script(server: FakeAnthropicServer, failure: str) -> None:
    server.reset()
    for _ in range(3):  # the retried paths take a second answer
        server.push(FAILURES[failure])


@pytest.fixture(autouse=True)
def _debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)


@pytest.mark.parametrize("failure", sorted(FAILURES))
@pytest.mark.parametrize("entry", ["env", "api_key"])
@pytest.mark.parametrize(
    "how",
    [
        "run",
        "astream",
        # The other two drivers share every rule with these; the whole matrix runs with the slow suite.
        pytest.param("arun", marks=pytest.mark.slow),
        pytest.param("stream", marks=pytest.mark.slow),
    ],
)
def test_the_library_never_shows_the_key(
    project: Path,
    server: FakeAnthropicServer,
    caplog: pytest.LogCaptureFixture,
    failure: str,
    entry: str,
    how: str,
) -> None:
    _script(server, failure)
    env = {KEY_ENV: CANARY} if entry == "env" else {KEY_ENV: "unused-variable-value"}
    engine = Engine(project, env=env, retry_hooks=_hooks())
    request = RunRequest(prompt_id="hello", api_key=CANARY if entry == "api_key" else None)
    seen = Seen()
    try:
        if how == "run":
            seen.add(engine.run(request).model_dump_json())
        elif how == "arun":
            seen.add(asyncio.run(engine.arun(request)).model_dump_json())
        elif how == "stream":
            with engine.stream(request) as events:
                seen.add(*(event.model_dump_json() for event in events))
        else:

            async def read() -> None:
                async with engine.astream(request) as events:
                    async for event in events:
                        seen.add(event.model_dump_json())

            asyncio.run(read())
    except ScriptoriumError as err:
        seen.error(err)
    seen.add(repr(request), repr(engine))
    seen.check(caplog)


@pytest.mark.parametrize("failure", sorted(FAILURES))
@pytest.mark.parametrize("entry", ["server-env", "client-key"])
@pytest.mark.parametrize("events", [False, True], ids=["plain", "sse"])
def test_the_http_api_never_shows_the_key(
    project: Path,
    server: FakeAnthropicServer,
    caplog: pytest.LogCaptureFixture,
    failure: str,
    entry: str,
    events: bool,
) -> None:
    _script(server, failure)
    if entry == "server-env":
        app = create_app(Engine(project, env={KEY_ENV: CANARY}, retry_hooks=_hooks()))
        body: dict[str, Any] = {"prompt_id": "hello"}
    else:
        engine = Engine(project, env={KEY_ENV: "server-own-key-value"}, retry_hooks=_hooks())
        app = create_app(engine, allow_client_keys=True)
        body = {"prompt_id": "hello", "api_key": CANARY}
    headers = {"accept": "text/event-stream"} if events else {}
    response = call(app, "POST", "/v1/runs", json=body, headers=headers)
    seen = Seen()
    seen.add(response.text, json.dumps(dict(response.headers)))
    seen.check(caplog)


#: Failures the retry loop waits on: a raw kernel payload takes the default retries with real
#: backoff sleeps, so those cases run with the slow suite.
RETRIED = {"rate-limit-echo", "reset", "reset-mid-stream", "server-error-echo"}
KERNEL_CASES = [
    pytest.param(
        payload, failure, marks=[pytest.mark.slow] * (payload == "raw" and failure in RETRIED)
    )
    for payload in ("raw", "prompt")
    for failure in sorted(FAILURES)
]


@pytest.mark.parametrize(("payload", "failure"), KERNEL_CASES)
def test_the_kernel_never_shows_the_key(
    project: Path,
    server: FakeAnthropicServer,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    failure: str,
    payload: str,
) -> None:
    _script(server, failure)
    env = {
        "CC_LLM_PROVIDER": "anthropic",
        "ANTHROPIC_API_KEY": CANARY,
        "ANTHROPIC_BASE_URL": server.url,
    }
    init: dict[str, Any] = (
        {"model": MODEL, "user": "Say hello."}
        if payload == "raw"
        else {"prompt_id": "hello", "root": str(project), "overrides": {"max_retries": 0}}
    )
    stdin = json.dumps({"op": "init", "payload": init}).encode() + b"\n"
    out = io.BytesIO()
    serve(io.BytesIO(stdin), out, env, pid=1)
    seen = Seen()
    captured = capsys.readouterr()
    seen.add(out.getvalue().decode("ascii"), captured.out, captured.err)
    seen.check(caplog)


@pytest.mark.parametrize("failure", ["auth-echo", "html-200", "server-error-echo"])
def test_batch_files_never_hold_the_key(
    project: Path,
    server: FakeAnthropicServer,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    failure: str,
) -> None:
    _script(server, failure)
    monkeypatch.setenv(KEY_ENV, CANARY)
    monkeypatch.chdir(project)
    source, out = project / "in.jsonl", project / "out.jsonl"
    source.write_text('{"id": 1}\n{"id": 2}\n', encoding="utf-8")
    main(["batch", "hello", "--in", str(source), "--out", str(out)])
    seen = Seen()
    captured = capsys.readouterr()
    seen.add(captured.out, captured.err)
    for path in project.iterdir():
        if path.is_file():
            seen.add(path.read_bytes().decode("utf-8", "replace"))
    seen.add(*os.listdir(project))
    seen.check(caplog)
