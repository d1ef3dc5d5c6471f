"""The scripted loopback HTTP core under the fake provider servers.

A :class:`ScriptedHTTPServer` serves ``POST`` requests on ``127.0.0.1`` from a queue of scripted
steps (a status with a body and headers, a delay, a connection reset, raw malformed bytes, a
recorded exchange replayed byte for byte: :meth:`~ScriptedHTTPServer.replay`), records
every request, and falls back to a provider-specific default answer when the script is empty.
Subclasses add the provider's paths and body shapes (``FakeAnthropicServer``, ``FakeOpenAIServer``).

HTTP/1.1 keep-alive and concurrent connections are served (one thread per connection, a deep listen
backlog, Nagle off), as the SDKs' pools expect. Benchmarks run the SDK client in the same process,
so every microsecond the server holds the GIL is taken from the client: the handler therefore
parses the little HTTP the SDKs send by hand (``http.server`` parses headers with ``email``, several
times slower) and writes each answer with one ``sendall``.
"""

from __future__ import annotations

import json
import socket
import socketserver
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from types import TracebackType
from typing import Any, Self

__all__ = [
    "RESET",
    "Answer",
    "Chunks",
    "RecordedRequest",
    "ScriptedHTTPServer",
    "sse",
    "text_pieces",
]

#: A streamed part that drops the connection (TCP reset) instead of sending more.
RESET = b"\x00reset"

#: How a fake server cuts streamed text: a number of characters per chunk, or the chunks.
Chunks = int | Sequence[str]
#: The characters per chunk when a script does not say.
CHUNK_CHARS = 8


def text_pieces(text: str, chunks: Chunks | None) -> list[str]:
    """``text`` cut as ``chunks`` says (none for an empty text)."""
    if chunks is not None and not isinstance(chunks, int):
        return list(chunks)
    size = chunks or CHUNK_CHARS
    return [text[i : i + size] for i in range(0, len(text), size)]


#: Recorded headers :meth:`ScriptedHTTPServer.replay` leaves out (the fake frames the body).
_TRANSFER_HEADERS = frozenset(
    {"content-length", "transfer-encoding", "content-encoding", "connection", "keep-alive"}
)


def sse(event: str | None, data: Any) -> bytes:
    """One server-sent event: ``event: NAME`` (when given) and ``data:`` holding ``data`` as JSON
    (a ``str`` is sent as it is)."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received: path, headers (lower-cased names) and parsed JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes


@dataclass(frozen=True)
class Answer:
    """What to send back. ``reset`` drops the connection (TCP RST) instead of answering.

    ``parts`` streams the body instead (chunked transfer encoding): ``(delay_s, bytes)`` pairs
    sent in order, each after its delay; a part of :data:`RESET` drops the connection there.
    """

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    reset: bool = False
    parts: tuple[tuple[float, bytes], ...] | None = None
    #: A recorded answer (:meth:`ScriptedHTTPServer.replay`): a platform fake adds nothing of
    #: its own to it (only the framing its route needs).
    recorded: bool = False

    @staticmethod
    def json(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Answer:
        """``body`` serialised as JSON."""
        return Answer(status, json.dumps(body).encode("utf-8"), dict(headers or {}))


#: A step turns the recorded request into an answer (some answers echo the request's model).
Build = Callable[[RecordedRequest], Answer]


@dataclass(frozen=True)
class _Step:
    build: Build
    delay_s: float = 0.0


class ScriptedHTTPServer:
    """Serves scripted answers on an ephemeral loopback port; use as a context manager.

    Subclasses set :attr:`paths` (the POST paths served; others get :meth:`not_found`) and
    implement :meth:`default_answer`. ``latency_s`` delays every answer; ``record=False`` keeps no
    requests (long benchmarks).
    """

    paths: tuple[str, ...] = ()

    def __init__(self, *, latency_s: float = 0.0, record: bool = True) -> None:
        self.latency_s = latency_s
        self.record = record
        self._script: deque[_Step] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- for subclasses ----------------------------------------------------------------------

    def default_answer(self, request: RecordedRequest) -> Answer:
        """What an empty script answers."""
        raise NotImplementedError

    def not_found(self, request: RecordedRequest) -> Answer:
        """The answer for a path outside :attr:`paths`."""
        return Answer.json({"error": {"message": f"no route {request.path}"}}, status=404)

    def response_headers(self) -> Mapping[str, str]:
        """Headers sent on every answer, before the answer's own (called once per answer)."""
        return {}

    def scripted(self, path: str) -> bool:
        """Whether a ``POST`` to ``path`` (its query left out) takes the next scripted step:
        one of :attr:`paths`; a platform whose paths name the model matches them its way."""
        return path.rstrip("/") in self.paths

    def deliver(self, request: RecordedRequest, answer: Answer) -> Answer:
        """The scripted (or default) answer as sent: as it is, or in a platform's own framing."""
        return answer

    def route(self, request: RecordedRequest) -> Answer | None:
        """An answer for a request outside the scripted ``POST`` paths (the batch endpoints), or
        None to fall through to the script. Routed requests are recorded too, but consume no
        scripted step."""
        return None

    def push(self, build: Build, delay_s: float = 0.0) -> None:
        """Queue one step."""
        with self._lock:
            self._script.append(_Step(build, delay_s))

    def clear(self) -> None:
        """Forget the script and the recorded requests (one server shared by many tests)."""
        with self._lock:
            self._script.clear()
            self._requests.clear()

    def reset(self) -> None:
        """The same as :meth:`clear`."""
        self.clear()

    # --- generic steps -----------------------------------------------------------------------

    def reply_json(
        self,
        body: Any,
        *,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """Queue ``body`` serialised as JSON, whatever its shape."""
        answer = Answer.json(body, status, headers)
        self.push(lambda _req: answer, delay_s)

    def malformed(
        self,
        raw: bytes = b'{"choices": [ not json',
        *,
        status: int = 200,
        content_type: str = "application/json",
        delay_s: float = 0.0,
    ) -> None:
        """Queue raw bytes sent as they are (a non-JSON or truncated "200")."""
        answer = Answer(status, raw, content_type=content_type)
        self.push(lambda _req: answer, delay_s)

    def replay(
        self,
        body: bytes | str,
        *,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """Queue a recorded answer, sent byte for byte: ``status``, ``body`` as recorded (a
        ``str`` as UTF-8) and the recorded ``headers``. Its content type is the recorded one
        (``application/json`` when it names none); a ``text/event-stream`` body is sent chunked,
        as servers stream it (a platform fake frames it its own way, e.g. Bedrock's event
        stream), any other body with its length. Headers that describe the recorded transfer
        rather than the answer (``content-length``, ``transfer-encoding``,
        ``content-encoding``: recordings keep bodies decoded, ``connection``, ``keep-alive``)
        are left out: the fake frames the body itself."""
        data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
        kept: dict[str, str] = {}
        content_type = "application/json"
        for name, value in (headers or {}).items():
            lowered = name.lower()
            if lowered == "content-type":
                content_type = value
            elif lowered not in _TRANSFER_HEADERS:
                kept[name] = value
        if content_type.split(";")[0].strip().lower() == "text/event-stream":
            answer = Answer(
                status, headers=kept, content_type=content_type, parts=((0.0, data),), recorded=True
            )
        else:
            answer = Answer(status, data, kept, content_type=content_type, recorded=True)
        self.push(lambda _req: answer, delay_s)

    def reset_connection(self, *, delay_s: float = 0.0) -> None:
        """Queue a step that drops the connection (TCP reset) without answering."""
        self.push(lambda _req: Answer(reset=True), delay_s)

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind an ephemeral loopback port and serve on a daemon thread. Returns ``self``."""
        handler = type("_BoundHandler", (_Handler,), {"fake": self})
        httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd = httpd
        # The poll interval bounds how long stop() waits for the serving loop to notice.
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def close_connections(self) -> int:
        """Close every connection open now, keep serving (what a server does to keep-alive
        connections idle past its timeout); how many it closed. Call it while no request is in
        flight: one being answered is cut off too."""
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already gone
        return len(connections)

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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not running")
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

    def answer_unsent(self, request: RecordedRequest) -> Answer:
        """What ``request`` would be answered if it were sent now: the next scripted step (its
        delay skipped, the request not recorded), else the default answer. Batch rows are answered
        this way, so ``reply``/``fail`` script them in row order too."""
        with self._lock:
            step = self._script.popleft() if self._script else None
        if step is None:
            return self.default_answer(request)
        return step.build(request)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            if self.record:
                self._requests.append(request)

    def _answer(self, request: RecordedRequest) -> tuple[Answer, float]:
        with self._lock:
            if self.record:
                self._requests.append(request)
            step = self._script.popleft() if self._script else None
        if step is None:
            return self.default_answer(request), 0.0
        return step.build(request), step.delay_s


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    # Many clients connect at once in async benchmarks; the default backlog (5) would turn that
    # burst into SYN retries measured as latency.
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], handler: type[_Handler]) -> None:
        super().__init__(address, handler)
        self.to_reset: set[int] = set()

    def shutdown_request(self, request: Any) -> None:
        # The default half-closes first (a FIN the client may read as a clean EOF); a reset goes
        # straight to close(), which SO_LINGER 0 turns into an RST.
        if id(request) in self.to_reset:
            self.to_reset.discard(id(request))
            self.close_request(request)
        else:
            super().shutdown_request(request)


_MAX_LINE = 65536


class _Handler(socketserver.StreamRequestHandler):
    """Serves the requests of one keep-alive connection until the client or the server closes."""

    fake: ScriptedHTTPServer
    server: _Server
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        with self.fake._lock:
            self.fake._connections.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass  # the peer is gone; nothing is left to flush
        finally:
            with self.fake._lock:
                self.fake._connections.discard(self.connection)

    def handle(self) -> None:
        try:
            while self._serve_one():
                pass
        except (OSError, ValueError):
            pass  # the client hung up, reset, or sent something that is not HTTP

    def _serve_one(self) -> bool:
        """Answer one request; False once the connection should close."""
        line = self.rfile.readline(_MAX_LINE)
        while line in (b"\r\n", b"\n"):  # stray line breaks between requests are allowed
            line = self.rfile.readline(_MAX_LINE)
        if not line:
            return False
        method, target, version = line.decode("latin-1").split()
        headers: dict[str, str] = {}
        while True:
            header = self.rfile.readline(_MAX_LINE)
            if header in (b"\r\n", b"\n", b""):
                break
            name, _, value = header.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        connection = headers.get("connection", "").lower()
        keep_alive = connection != "close" and (version == "HTTP/1.1" or connection == "keep-alive")
        if method not in ("POST", "GET", "DELETE"):
            error = {"error": {"message": f"method {method} not supported"}}
            return self._send(Answer.json(error, status=501)) and keep_alive
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = RecordedRequest(method, target, headers, body, raw)
        routed = self.fake.route(request)
        if routed is not None:
            self.fake._record(request)
            return self._send(routed) and keep_alive
        if method != "POST" or not self.fake.scripted(target.split("?")[0]):
            return self._send(self.fake.not_found(request)) and keep_alive
        answer, delay_s = self.fake._answer(request)
        answer = self.fake.deliver(request, answer)
        if delay_s or self.fake.latency_s:
            time.sleep(delay_s + self.fake.latency_s)
        if answer.reset:
            self._reset()
            return False
        return self._send(answer) and keep_alive

    def _send(self, answer: Answer) -> bool:
        """Write the whole answer at once; False when it asks to close the connection."""
        try:
            phrase = HTTPStatus(answer.status).phrase
        except ValueError:
            phrase = ""  # a status the stdlib does not name (Anthropic's 529)
        streamed = answer.parts is not None
        lines = [
            f"HTTP/1.1 {answer.status} {phrase}",
            f"content-type: {answer.content_type}",
            "transfer-encoding: chunked" if streamed else f"content-length: {len(answer.body)}",
        ]
        keep_alive = True
        for headers in (self.fake.response_headers(), answer.headers):
            for name, value in headers.items():
                lines.append(f"{name}: {value}")
                if name.lower() == "connection" and value.lower() == "close":
                    keep_alive = False
        lines.append("\r\n")
        head = "\r\n".join(lines).encode("latin-1")
        try:
            if answer.parts is not None:
                return self._stream(head, answer.parts) and keep_alive
            self.connection.sendall(head + answer.body)
        except OSError:
            return False  # the client gave up first (a per-attempt timeout)
        return keep_alive

    def _stream(self, head: bytes, parts: tuple[tuple[float, bytes], ...]) -> bool:
        """Send the head, then each part as an HTTP chunk after its delay; False after a reset."""
        pending = head
        for delay_s, data in parts:
            if delay_s > 0:
                if pending:
                    self.connection.sendall(pending)
                    pending = b""
                time.sleep(delay_s)
            if data == RESET:
                if pending:
                    self.connection.sendall(pending)
                self._reset()
                return False
            # Parts without a delay between them go out in one write, as a server's buffer would.
            pending += b"%x\r\n%s\r\n" % (len(data), data) if data else b""
        self.connection.sendall(pending + b"0\r\n\r\n")
        return True

    def _reset(self) -> None:
        # SO_LINGER with a zero timeout makes close() send RST: the client sees a reset, not EOF.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.server.to_reset.add(id(self.connection))
