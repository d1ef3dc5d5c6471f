"""``FakeAnthropicServer``: a loopback HTTP server speaking enough of the Messages API for the real
``anthropic`` SDK to be tested end to end, with scripted responses and faults.

    with FakeAnthropicServer() as server:
        server.fail(429, headers={"retry-after": "1"})
        server.reply(text="hello", usage={"input_tokens": 12, "output_tokens": 3})
        client = anthropic.Anthropic(api_key="k", base_url=server.url, max_retries=0)
        ...
        server.requests[-1].body["messages"]

Each ``POST /v1/messages`` consumes the next scripted step; with the script empty the server
answers with its default reply (``default_text``), or a 500 when that is None. Steps can be
delayed; ``reset_connection`` drops the connection without answering; ``malformed`` sends raw
bytes as a 200. HTTP/1.1 keep-alive and concurrent connections are served (one thread per
connection, a deep listen backlog, Nagle off) so the server is not the bottleneck of a benchmark.
"""

from __future__ import annotations

import itertools
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["FakeAnthropicServer", "RecordedRequest"]

DEFAULT_USAGE: dict[str, int] = {"input_tokens": 10, "output_tokens": 5}


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received: path, headers (lower-cased names) and parsed JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes


@dataclass
class _Answer:
    """What to send back. ``reset`` drops the connection instead."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    reset: bool = False


# A step turns the recorded request into an answer (it may need the request's model or tool).
_Build = Callable[[RecordedRequest], _Answer]


@dataclass
class _Step:
    build: _Build
    delay_s: float = 0.0


def _message_body(
    request: RecordedRequest,
    content: list[dict[str, Any]],
    stop_reason: str | None,
    usage: Mapping[str, int] | None,
    model: str | None,
    ident: str,
) -> bytes:
    asked = request.body.get("model") if isinstance(request.body, dict) else None
    message = {
        "id": ident,
        "type": "message",
        "role": "assistant",
        "model": model or asked or "claude-fake",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": dict(DEFAULT_USAGE if usage is None else usage),
    }
    return json.dumps(message).encode()


class FakeAnthropicServer:
    """A scripted Messages API on ``127.0.0.1``; use as a context manager; ``url`` is the base URL.

    ``latency_s`` delays every answer; ``default_text`` is what an empty script answers (None: a
    500 error); ``record=False`` keeps no ``requests`` (long benchmarks).
    """

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        default_text: str | None = "ok",
        default_usage: Mapping[str, int] | None = None,
        record: bool = True,
    ) -> None:
        self.latency_s = latency_s
        self.default_text = default_text
        self.default_usage = dict(default_usage or DEFAULT_USAGE)
        self.record = record
        self._script: deque[_Step] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._connections: set[socket.socket] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> FakeAnthropicServer:
        """Bind an ephemeral loopback port and serve on a daemon thread."""
        handler = type("_BoundHandler", (_Handler,), {"fake": self})
        httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and drop every open connection."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already gone
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeAnthropicServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL to give the SDK (``http://127.0.0.1:<port>``)."""
        if self._httpd is None:
            raise RuntimeError("FakeAnthropicServer is not running")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of the requests received so far."""
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        """Scripted steps not yet consumed."""
        with self._lock:
            return len(self._script)

    def reset(self) -> None:
        """Forget the script and the recorded requests (to reuse one server across tests)."""
        with self._lock:
            self._script.clear()
            self._requests.clear()

    # --- scripting -------------------------------------------------------------------------------

    def _push(self, build: _Build, delay_s: float) -> None:
        with self._lock:
            self._script.append(_Step(build, delay_s))

    def reply(
        self,
        text: str = "ok",
        *,
        usage: Mapping[str, int] | None = None,
        stop_reason: str | None = "end_turn",
        model: str | None = None,
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """Queue a 200 with one text block."""
        extra = dict(headers or {})

        def build(req: RecordedRequest) -> _Answer:
            content = [{"type": "text", "text": text}]
            body = _message_body(req, content, stop_reason, usage, model, self._next_id())
            return _Answer(body=body, headers=extra)

        self._push(build, delay_s)

    def reply_tool(
        self,
        input: Any,
        *,
        name: str | None = None,
        usage: Mapping[str, int] | None = None,
        stop_reason: str | None = "tool_use",
        delay_s: float = 0.0,
    ) -> None:
        """Queue a 200 with a ``tool_use`` block (``name`` defaults to the request's forced tool)."""

        def build(req: RecordedRequest) -> _Answer:
            chosen = name
            if chosen is None and isinstance(req.body, dict):
                choice = req.body.get("tool_choice")
                chosen = choice.get("name") if isinstance(choice, dict) else None
            block = {
                "type": "tool_use",
                "id": "toolu_fake",
                "name": chosen or "output",
                "input": input,
            }
            body = _message_body(req, [block], stop_reason, usage, None, self._next_id())
            return _Answer(body=body)

        self._push(build, delay_s)

    def reply_json(
        self,
        body: Any,
        *,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """Queue ``body`` serialised as JSON, as given (any shape)."""
        data, extra = json.dumps(body).encode(), dict(headers or {})
        self._push(lambda _req: _Answer(status=status, body=data, headers=extra), delay_s)

    def fail(
        self,
        status: int,
        *,
        body: Any = None,
        error_type: str | None = None,
        message: str = "scripted failure",
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """Queue an error status. Without ``body``, an Anthropic-shaped error with ``error_type``
        (default: the type Anthropic uses for that status)."""
        if body is None:
            kind = error_type or _ERROR_TYPES.get(status, "api_error")
            body = {"type": "error", "error": {"type": kind, "message": message}}
        self.reply_json(body, status=status, headers=headers, delay_s=delay_s)

    def malformed(
        self,
        raw: bytes,
        *,
        status: int = 200,
        content_type: str = "application/json",
        delay_s: float = 0.0,
    ) -> None:
        """Queue raw bytes sent as they are (a non-JSON or truncated "200")."""
        self._push(
            lambda _req: _Answer(status=status, body=raw, content_type=content_type), delay_s
        )

    def reset_connection(self, *, delay_s: float = 0.0) -> None:
        """Queue a step that drops the connection (TCP reset) without answering."""
        self._push(lambda _req: _Answer(reset=True), delay_s)

    def delay(self, seconds: float, text: str = "ok") -> None:
        """Queue a reply sent only after ``seconds`` (a client with a shorter timeout gives up)."""
        self.reply(text, delay_s=seconds)

    # --- serving ---------------------------------------------------------------------------------

    def _next_id(self) -> str:
        return f"msg_fake_{next(self._ids)}"

    def _answer(self, request: RecordedRequest) -> tuple[_Answer, float]:
        with self._lock:
            if self.record:
                self._requests.append(request)
            step = self._script.popleft() if self._script else None
        if step is not None:
            return step.build(request), step.delay_s
        if self.default_text is None:
            body = {"type": "error", "error": {"type": "api_error", "message": "script exhausted"}}
            return _Answer(status=500, body=json.dumps(body).encode()), 0.0
        content = [{"type": "text", "text": self.default_text}]
        data = _message_body(
            request, content, "end_turn", self.default_usage, None, self._next_id()
        )
        return _Answer(body=data), 0.0


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Hundreds of clients connect at once in the async benchmark; the default backlog (5) would
    # turn that burst into SYN retries measured as latency.
    request_queue_size = 1024


class _Handler(BaseHTTPRequestHandler):
    fake: FakeAnthropicServer
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's pool expects
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        with self.fake._lock:
            self.fake._connections.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.fake._lock:
                self.fake._connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests and benchmarks read ``requests``, not a log."""

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = RecordedRequest(
            method="POST",
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw=raw,
        )
        if self.path.split("?")[0].rstrip("/") != "/v1/messages":
            error = {"type": "error", "error": {"type": "not_found_error", "message": self.path}}
            self._send(_Answer(status=404, body=json.dumps(error).encode()))
            return
        answer, delay_s = self.fake._answer(request)
        if delay_s or self.fake.latency_s:
            time.sleep(delay_s + self.fake.latency_s)
        if answer.reset:
            self._reset()
            return
        self._send(answer)

    def _send(self, answer: _Answer) -> None:
        self.send_response(answer.status)
        self.send_header("content-type", answer.content_type)
        self.send_header("content-length", str(len(answer.body)))
        self.send_header("request-id", f"req_fake_{next(self.fake._ids)}")
        for name, value in answer.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(answer.body)

    def _reset(self) -> None:
        # SO_LINGER with a zero timeout makes close() send RST: the client sees a reset, not EOF.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        try:
            self.connection.close()
        except OSError:
            pass
