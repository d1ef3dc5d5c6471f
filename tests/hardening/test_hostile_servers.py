"""Hostile upstreams, through the real SDKs and scriptorium's own HTTP clients.

Two promises, on every provider, sync and async:

- **each request gets its own answer or a sentinel, never another's**: an upstream that writes a
  second response after the first, garbage after the body, two ``Content-Length`` s, or a chunked
  body with a length too, must not make a later request on the same connection read those bytes;
- **a run ends by its deadline** (``timeout_s`` + 0.5 s) whatever the server sends: a body
  dripped a byte at a time, ``100 Continue`` forever, headers that never end, an endless chunked
  body, and a stream that sends one delta and then only keep-alive pings.

Each answer the well-behaved path sends echoes the prompt, so a test sees whose answer came back.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from typing import Any

import pytest

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.anthropic.client import AnthropicClient
from scriptorium.llm.gemini.client import GeminiClient
from scriptorium.llm.model import LLMRequest, Target
from scriptorium.llm.openai.client import OpenAIClient
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message
from tests.hardening.hostile import (
    HostileServer,
    anthropic_body,
    anthropic_sse,
    gemini_body,
    openai_body,
    openai_sse,
    response,
)

#: The budget of the deadline tests, and how far past it a run may end.
BUDGET_S = 0.6
# Room for a loaded machine (the runs end well inside it when the machine is quiet); every
# hostile server here goes on until it is closed, so a deadline that did not hold never ends.
SLACK_S = 1.4
STEP_S = 0.05  # how often a hostile server sends its next byte, line or event

BODIES: dict[str, Callable[[str], bytes]] = {
    "anthropic": anthropic_body,
    "openai": openai_body,
    "gemini": gemini_body,
}
MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4o-mini", "gemini": "gemini-2.5-flash"}


def make_client(provider: str) -> Any:
    return {"anthropic": AnthropicClient, "openai": OpenAIClient, "gemini": GeminiClient}[
        provider
    ]()


def request(provider: str, url: str, prompt: str, **settings: Any) -> LLMRequest:
    return LLMRequest(
        target=Target(provider=provider, model=MODELS[provider], endpoint=url),
        api_key="hostile-test-key-0000",
        messages=(Message(role="user", content=prompt),),
        settings=ExecutionSettings(**settings),
    )


def run_sync(client: Any, requests: list[LLMRequest]) -> list[tuple[Any, float]]:
    """Each request in turn on one client (one connection pool): its text or its error, and the
    seconds it took."""
    out: list[tuple[Any, float]] = []
    try:
        for item in requests:
            start = time.monotonic()
            try:
                answer: Any = client.generate(item).text
            except LLMGenerateError as err:
                answer = err
            out.append((answer, time.monotonic() - start))
    finally:
        client.close()
    return out


def run_async(client: Any, requests: list[LLMRequest]) -> list[tuple[Any, float]]:
    async def main() -> list[tuple[Any, float]]:
        out: list[tuple[Any, float]] = []
        try:
            for item in requests:
                start = time.monotonic()
                try:
                    answer: Any = (await client.agenerate(item)).text
                except LLMGenerateError as err:
                    answer = err
                out.append((answer, time.monotonic() - start))
        finally:
            await client.aclose()
        return out

    return asyncio.run(main())


RUNNERS = {"sync": run_sync, "async": run_async}


@pytest.fixture(autouse=True, scope="module")
def _sdks_loaded() -> None:
    """Import the SDKs and walk each one's request path once (plain and streamed), before any
    clock starts: a deadline bounds the call, and an SDK's first use imports and builds seconds'
    worth of modules on these machines (an older openai release does it inside the first call)."""

    def good(sock: socket.socket, index: int, prompt: str, server: HostileServer) -> None:
        provider = {"anthropic": "anthropic", "openai": "openai"}.get(server.tag, "gemini")
        sock.sendall(response(BODIES[provider](prompt)))

    for provider in MODELS:
        with HostileServer(good) as server:
            server.tag = provider
            client = make_client(provider)
            try:
                ask = request(provider, server.url, "warm", max_retries=0, timeout_s=30)
                client.generate(ask)
                list(client.stream(ask))
            finally:
                client.close()


# --- stray bytes ----------------------------------------------------------------------------------

Serve = Callable[[socket.socket, int, str, HostileServer], None]


def _first_then_clean(first: Callable[[bytes], bytes], provider: str) -> Serve:
    """The first request is answered by ``first(its own good answer)``; later ones well."""
    body_of = BODIES[provider]

    def serve(sock: socket.socket, index: int, prompt: str, server: HostileServer) -> None:
        good = response(body_of(prompt))
        sock.sendall(first(good) if index == 0 else good)

    return serve


def _second_response(provider: str) -> Callable[[bytes], bytes]:
    return lambda good: good + response(BODIES[provider]("STRAY"))


def _garbage(provider: str) -> Callable[[bytes], bytes]:
    return lambda good: good + b"garbage after the body\r\n"


def _two_lengths(provider: str) -> Callable[[bytes], bytes]:
    def answer(good: bytes) -> bytes:
        body = BODIES[provider]("q0")
        return (
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(body)}\r\ncontent-length: {len(body) + 7}\r\n\r\n".encode()
            + body
            + b"STRAY!!"
        )

    return answer


def _chunked_and_length(provider: str) -> Callable[[bytes], bytes]:
    def answer(good: bytes) -> bytes:
        body = BODIES[provider]("q0")
        chunk = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
        return (
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            b"transfer-encoding: chunked\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + chunk
        )

    return answer


STRAY = {
    "second response": _second_response,
    "trailing garbage": _garbage,
    "two content-lengths": _two_lengths,
    "chunked and a length": _chunked_and_length,
}


@pytest.mark.parametrize("mode", sorted(RUNNERS))
@pytest.mark.parametrize("provider", ["anthropic", "openai", "gemini"])
@pytest.mark.parametrize("kind", sorted(STRAY))
def test_each_request_gets_its_own_answer_or_a_sentinel(
    kind: str, provider: str, mode: str
) -> None:
    with HostileServer(_first_then_clean(STRAY[kind](provider), provider)) as server:
        prompts = [f"q{i}" for i in range(4)]
        asks = [request(provider, server.url, p, max_retries=0, timeout_s=5) for p in prompts]
        answers = [answer for answer, _ in RUNNERS[mode](make_client(provider), asks)]
    for prompt, answer in zip(prompts, answers, strict=True):
        assert isinstance(answer, LLMGenerateError) or answer == prompt, (prompt, answers)
    # Only the first answer may be lost to the broken framing: the connection it broke is gone.
    assert answers[1:] == prompts[1:], answers


# --- the deadline ---------------------------------------------------------------------------------


def _drip(provider: str) -> Serve:
    def serve(sock: socket.socket, index: int, prompt: str, server: HostileServer) -> None:
        for byte in response(BODIES[provider](prompt)):
            if not server.sleep(STEP_S):
                return
            sock.sendall(bytes([byte]))

    return serve


def _continue_forever(provider: str) -> Serve:
    def serve(sock: socket.socket, index: int, prompt: str, server: HostileServer) -> None:
        while server.sleep(STEP_S):
            sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")

    return serve


def _slow_headers(provider: str) -> Serve:
    def serve(sock: socket.socket, index: int, prompt: str, server: HostileServer) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
        number = 0
        while server.sleep(STEP_S):
            number += 1
            sock.sendall(f"x-slow-{number}: still coming\r\n".encode())

    return serve


def _endless_chunked(provider: str) -> Serve:
    def serve(sock: socket.socket, index: int, prompt: str, server: HostileServer) -> None:
        sock.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            b"transfer-encoding: chunked\r\n\r\n1\r\n[\r\n"
        )
        while server.sleep(STEP_S):
            sock.sendall(b"1\r\n \r\n")

    return serve


def _after_one_good(hang: Callable[[str], Serve], provider: str) -> Serve:
    """Answer the first request well (the SDK client built, a connection pooled), then hang."""
    hostile = hang(provider)

    def serve(sock: socket.socket, index: int, prompt: str, server: HostileServer) -> None:
        if index == 0:
            sock.sendall(response(BODIES[provider](prompt)))
        else:
            hostile(sock, index, prompt, server)

    return serve


HANGS = {
    "drip": _drip,
    "100 continue forever": _continue_forever,
    "slow headers": _slow_headers,
    "endless chunked body": _endless_chunked,
}


#: The deadline cases the fast suite runs (each kind, each provider, both modes at least once);
#: the rest of the grid is marked slow.
FAST_HANGS = {
    ("drip", "anthropic", "sync"),
    ("drip", "gemini", "async"),
    ("100 continue forever", "anthropic", "async"),
    ("slow headers", "openai", "sync"),
    ("endless chunked body", "gemini", "sync"),
    ("endless chunked body", "openai", "async"),
}
HANG_CASES = [
    pytest.param(
        kind, provider, mode, marks=() if (kind, provider, mode) in FAST_HANGS else pytest.mark.slow
    )
    for kind in sorted(HANGS)
    for provider in ("anthropic", "openai", "gemini")
    for mode in sorted(RUNNERS)
]


@pytest.mark.parametrize(("kind", "provider", "mode"), HANG_CASES)
def test_a_run_ends_by_its_deadline(kind: str, provider: str, mode: str) -> None:
    with HostileServer(_after_one_good(HANGS[kind], provider)) as server:
        asks = [
            request(provider, server.url, p, max_retries=2, timeout_s=BUDGET_S)
            for p in ("warm", "q")
        ]
        (warm, _), (answer, took) = RUNNERS[mode](make_client(provider), asks)
    assert warm == "warm"
    assert isinstance(answer, LLMGenerateError), answer
    assert answer.reason == "timeout"
    assert (answer.attempts or 0) >= 1
    assert took <= BUDGET_S + SLACK_S, took


# --- streams that stop producing content ------------------------------------------------------------


def _anthropic_pings(sock: socket.socket, index: int, prompt: str, server: HostileServer) -> None:
    sock.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )

    def send(event: bytes) -> None:
        sock.sendall(f"{len(event):x}\r\n".encode() + event + b"\r\n")

    send(
        anthropic_sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-test",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 1, "output_tokens": 0},
                },
            },
        )
    )
    send(
        anthropic_sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
    )
    send(
        anthropic_sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": prompt},
            },
        )
    )
    while server.sleep(STEP_S):
        send(anthropic_sse("ping", {"type": "ping"}))


def _openai_pings(sock: socket.socket, index: int, prompt: str, server: HostileServer) -> None:
    sock.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )

    def send(event: bytes) -> None:
        sock.sendall(f"{len(event):x}\r\n".encode() + event + b"\r\n")

    def chunk(delta: dict[str, Any]) -> bytes:
        return openai_sse(
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "gpt-test",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
        )

    send(chunk({"role": "assistant", "content": prompt}))
    while server.sleep(STEP_S):
        send(chunk({}))  # an empty delta: no content
        send(b": keep-alive\n\n")


PINGS = {"anthropic": _anthropic_pings, "openai": _openai_pings}


def _stream_sync(client: Any, item: LLMRequest) -> tuple[Any, float]:
    """The stream's error (or its pieces), and the seconds from its first piece to its end."""
    first: float | None = None
    pieces: list[str] = []
    try:
        for piece in client.stream(item):
            first = time.monotonic() if first is None else first
            if isinstance(piece, str):
                pieces.append(piece)
    except LLMGenerateError as err:
        return err, time.monotonic() - (first or time.monotonic())
    finally:
        client.close()
    return pieces, 0.0


def _stream_async(client: Any, item: LLMRequest) -> tuple[Any, float]:
    async def main() -> tuple[Any, float]:
        first: float | None = None
        pieces: list[str] = []
        try:
            async for piece in client.astream(item):
                first = time.monotonic() if first is None else first
                if isinstance(piece, str):
                    pieces.append(piece)
        except LLMGenerateError as err:
            return err, time.monotonic() - (first or time.monotonic())
        finally:
            await client.aclose()
        return pieces, 0.0

    return asyncio.run(main())


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("provider", sorted(PINGS))
def test_a_stream_of_pings_after_a_delta_ends_at_the_gap(provider: str, mode: str) -> None:
    read = _stream_sync if mode == "sync" else _stream_async
    with HostileServer(PINGS[provider]) as server:
        ask = request(provider, server.url, "hello", max_retries=0, timeout_s=BUDGET_S)
        answer, took = read(make_client(provider), ask)
    assert isinstance(answer, LLMGenerateError), answer
    assert answer.reason == "timeout"
    assert answer.partial_text == "hello"
    # At most timeout_s without content once the first delta came.
    assert took <= BUDGET_S + SLACK_S, took


# --- through a proxy --------------------------------------------------------------------------------

#: An origin nobody resolves: every byte goes to the proxy the environment names.
FAR_ORIGIN = "http://origin.invalid:8080"


@pytest.fixture
def proxy_env(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Name a proxy for plain-HTTP origins, as a user's environment would."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)

    def use(url: str) -> None:
        monkeypatch.setenv("HTTP_PROXY", url)
        monkeypatch.setenv("http_proxy", url)

    return use


@pytest.mark.parametrize("mode", sorted(RUNNERS))
def test_through_a_proxy_the_deadline_and_the_guard_hold(
    mode: str, proxy_env: Callable[[str], None]
) -> None:
    """The hostile server is the proxy (a forward proxy answers the request line it is sent):
    the calls reach it, a stray second response is never handed to the next caller, and a drip
    ends at the deadline."""

    def serve(sock: socket.socket, index: int, prompt: str, server: HostileServer) -> None:
        good = response(anthropic_body(prompt))
        if index == 0:
            sock.sendall(good + response(anthropic_body("STRAY")))
        elif prompt == "drip":
            _drip("anthropic")(sock, index, prompt, server)
        else:
            sock.sendall(good)

    with HostileServer(serve) as proxy:
        proxy_env(proxy.url)
        asks = [
            request("anthropic", FAR_ORIGIN, p, max_retries=0, timeout_s=BUDGET_S)
            for p in ("q0", "q1", "q2", "drip")
        ]
        answers = RUNNERS[mode](make_client("anthropic"), asks)
        assert proxy.requests == 4
    assert [answer for answer, _ in answers[:3]] == ["q0", "q1", "q2"]
    late, took = answers[3]
    assert isinstance(late, LLMGenerateError), late
    assert late.reason == "timeout"
    assert took <= BUDGET_S + SLACK_S, took
