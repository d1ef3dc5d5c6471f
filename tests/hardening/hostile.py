"""A raw-socket loopback server that answers HTTP the way a broken or hostile upstream does.

Each connection is served by a thread: the server reads one request at a time (headers and a
``Content-Length`` body), finds the prompt text the client sent (the last user message), and hands
the socket to a *behaviour*, ``behaviour(sock, request_index, prompt, server)``, which writes
whatever bytes it likes. The well-formed answers echo the prompt, so a test can tell whether each
caller got its own answer or somebody else's.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

__all__ = [
    "HostileServer",
    "anthropic_body",
    "anthropic_sse",
    "gemini_body",
    "openai_body",
    "openai_sse",
    "response",
]

Behaviour = Callable[[socket.socket, int, str, "HostileServer"], None]


def anthropic_body(text: str) -> bytes:
    """A complete Anthropic Messages answer whose text is ``text``."""
    return json.dumps(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    ).encode()


def openai_body(text: str) -> bytes:
    """A complete OpenAI chat completion whose text is ``text``."""
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-test",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()


def gemini_body(text: str) -> bytes:
    """A complete Gemini ``generateContent`` answer whose text is ``text``."""
    return json.dumps(
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
            ],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1},
            "modelVersion": "gemini-test",
        }
    ).encode()


def anthropic_sse(event: str, data: dict[str, Any]) -> bytes:
    """One Anthropic server-sent event."""
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def openai_sse(data: dict[str, Any]) -> bytes:
    """One OpenAI server-sent event."""
    return f"data: {json.dumps(data)}\n\n".encode()


def response(
    body: bytes,
    *,
    status: str = "200 OK",
    content_type: str = "application/json",
    extra: str = "",
) -> bytes:
    """A well-formed HTTP/1.1 response with a ``Content-Length`` (``extra`` header lines added)."""
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\n"
        f"content-length: {len(body)}\r\n{extra}\r\n"
    )
    return head.encode() + body


def _prompt(body: bytes) -> str:
    """The last user text of an Anthropic, OpenAI or Gemini request body ('' when none)."""
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    for message in reversed(data.get("messages") or data.get("contents") or []):
        content = message.get("content", message.get("parts"))
        if isinstance(content, str):
            return content
        for part in content or []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                return str(part["text"])
    return ""


class HostileServer:
    """Serve ``behaviour`` on ``127.0.0.1`` until closed (a context manager). ``url`` is its base
    URL; ``requests`` counts the requests read; ``connections`` the connections accepted."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        #: Free for a test to mark the server with (a behaviour sees the server).
        self.tag = ""
        self.requests = 0
        self.connections = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0), backlog=256)
        self._sock.settimeout(0.1)
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._clients: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()
        with self._lock:
            clients, self._clients = self._clients, []
        for client in clients:
            try:
                client.close()
            except OSError:
                pass

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def sleep(self, seconds: float) -> bool:
        """Wait ``seconds``; False when the server is closing (a behaviour should then return)."""
        return not self._stop.wait(seconds)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.connections += 1
                self._clients.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        buffer = b""
        client.settimeout(0.2)
        try:
            while not self._stop.is_set():
                while b"\r\n\r\n" not in buffer:
                    try:
                        chunk = client.recv(65536)
                    except TimeoutError:
                        if self._stop.is_set():
                            return
                        continue
                    if not chunk:
                        return
                    buffer += chunk
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                while len(buffer) < length:
                    try:
                        chunk = client.recv(65536)
                    except TimeoutError:
                        if self._stop.is_set():
                            return
                        continue
                    if not chunk:
                        return
                    buffer += chunk
                body, buffer = buffer[:length], buffer[length:]
                with self._lock:
                    index = self.requests
                    self.requests += 1
                self.behaviour(client, index, _prompt(body), self)
        except OSError:
            return
        finally:
            try:
                client.close()
            except OSError:
                pass


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """``(what call returned or raised, seconds it took)``."""
    start = time.monotonic()
    try:
        value: Any = call()
    except Exception as err:
        value = err
    return value, time.monotonic() - start
