"""The HTTP transport under the SDK clients: HTTP/1.1 keep-alive connections in a pool whose work
per request does not grow with the number of connections.

The SDKs' own pool (``httpcore``) looks at every idle connection on every request (a readability
poll of each socket, to find one that is still usable), and its async backend builds a mapping of
socket attributes each time; with 200 requests in flight that is most of the client's CPU. Here a
pool is a stack of idle connections per origin: a request takes the most recently used one, checks
that one socket only (not expired, not readable: a server that closed it, or sent bytes nobody
asked for, makes it readable), and gives it back when its response has been read to the end.

What it keeps, for the SDKs and the retry loop above it:

- **timeouts per attempt**: the request's ``timeout`` extension (connect, read, write, pool),
  which the SDK sets from each attempt's budget; they raise the HTTP library's own
  ``ConnectTimeout``/``ReadTimeout``/``WriteTimeout``/``PoolTimeout``, which the SDKs turn into
  their timeout errors;
- **failures**: a refused or reset connection, or a response cut off, raises ``ConnectError``/
  ``ReadError``/``WriteError``/``RemoteProtocolError`` (the SDKs' connection errors; the retry
  loop decides about retrying, never this transport: a POST is not resent behind its back);
- **keep-alive**: a connection goes back to the pool only after a complete response that allows
  another (``h11`` decides, from the status, the headers and the framing); idle ones older than
  ``keepalive_expiry`` or beyond ``max_keepalive`` are closed, dead ones dropped when taken;
- **cancellation**: a request or a response read that is cancelled, or a response closed before
  its end (a stream the caller left), closes its connection: it is never reused half-read.

Parsing is ``h11``'s, the HTTP/1.1 state machine the SDKs' own transport uses. TLS through the
standard ``ssl`` module with the HTTP library's default context. HTTP/2 and proxies are not
spoken: :func:`pooled_http_client` gives no client when the environment names a proxy (the SDK's
default client then reads it, as before).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import select
import socket
import ssl
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["pooled_http_client", "transport_classes"]

#: What the SDKs' default clients allow (``DEFAULT_CONNECTION_LIMITS``).
MAX_CONNECTIONS = 1000
MAX_KEEPALIVE = 100
KEEPALIVE_EXPIRY_S = 5.0
_READ_SIZE = 64 * 1024
_HIGH_WATER = 1 << 20  # bytes buffered before an async connection stops reading
_DRAIN_LIMIT = 64 * 1024  # what a response closed early may still read, to keep its connection


class _Idle(Protocol):
    origin: tuple[str, str, int]
    idle_since: float

    def close(self) -> None: ...


C = TypeVar("C", bound=_Idle)


class _IdleStacks(Generic[C]):
    """The idle connections of one pool: a stack per origin (the most recently used on top),
    at most ``max_keepalive`` in all, none kept past ``expiry`` seconds idle. The one keep-alive
    rule of both pools; not locked (the sync pool calls it under its lock). What it evicts it
    hands back for the caller to close outside any lock."""

    def __init__(self, max_keepalive: int, expiry: float) -> None:
        self._stacks: dict[tuple[str, str, int], collections.deque[C]] = {}
        self._max_keepalive = max_keepalive
        self.expiry = expiry
        self.count = 0

    def pop(self, origin: tuple[str, str, int]) -> C | None:
        """The most recently used idle connection to ``origin`` (None: none), unchecked."""
        stack = self._stacks.get(origin)
        if not stack:
            return None
        self.count -= 1
        return stack.pop()

    def fresh(self, conn: C, now: float) -> bool:
        """Whether ``conn``, idle since its ``idle_since``, is young enough to reuse at ``now``."""
        return now - conn.idle_since <= self.expiry

    def push(self, conn: C) -> list[C]:
        """Keep ``conn`` (its ``idle_since`` set); the connections this evicts: past the
        keep-alive limit (the oldest of all origins first) or idle longer than ``expiry``."""
        stack = self._stacks.setdefault(conn.origin, collections.deque())
        stack.append(conn)
        self.count += 1
        evicted: list[C] = []
        while self.count > self._max_keepalive or (
            stack and conn.idle_since - stack[0].idle_since > self.expiry
        ):
            oldest = stack
            if self.count > self._max_keepalive:
                oldest = min((s for s in self._stacks.values() if s), key=lambda s: s[0].idle_since)
            evicted.append(oldest.popleft())
            self.count -= 1
        return evicted

    def drain(self) -> list[C]:
        """Every idle connection, the pool left empty (for the caller to close)."""
        stacks, self._stacks, self.count = list(self._stacks.values()), {}, 0
        return [conn for stack in stacks for conn in stack]


def _timeouts(request: Any) -> tuple[float | None, float | None, float | None, float | None]:
    given = request.extensions.get("timeout") or {}
    return given.get("connect"), given.get("read"), given.get("write"), given.get("pool")


def _origin(request: Any) -> tuple[str, str, int]:
    url = request.url
    scheme = url.scheme
    port = url.port or (443 if scheme == "https" else 80)
    return scheme, url.host, port


def _target(request: Any) -> bytes:
    target: bytes = request.url.raw_path
    return target


def _readable(sock: socket.socket) -> bool:
    """Whether an idle connection has something to read (the peer closed it, or sent bytes no
    request asked for): either way it cannot carry another request."""
    try:
        poller = select.poll()  # not select(): descriptors past FD_SETSIZE are common at 200 open
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True


def _socket_options(sock: socket.socket) -> None:
    """Nagle off (a request is written in one piece) and TCP keep-alive probes, as the SDKs set."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPINTVL", 60), ("TCP_KEEPCNT", 5), ("TCP_KEEPIDLE", 60)):
        option = getattr(socket, name, None)
        if option is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, option, value)
            except OSError:
                pass


def _h11() -> Any:
    import h11

    return h11


def _head(h11: Any, request: Any) -> Any:
    headers = [(name, value) for name, value in request.headers.raw]
    return h11.Request(method=request.method, target=_target(request), headers=headers)


_classes: dict[int, tuple[type[Any], type[Any]]] = {}
_classes_lock = threading.Lock()


def transport_classes(http: Any) -> tuple[type[Any], type[Any]]:
    """The (sync, async) pooled transport classes for the HTTP library ``http`` (``httpx2`` or
    ``httpx``: whichever the SDK is built on; their base classes and errors are that library's)."""
    found = _classes.get(id(http))
    if found is None:
        with _classes_lock:
            found = _classes.get(id(http))
            if found is None:
                found = _classes[id(http)] = _build(http)
    return found


def pooled_http_client(sdk: Any, is_async: bool) -> Any | None:
    """The SDK's own default HTTP client class (its timeouts, limits and redirect rule) over a
    pooled transport; None when the environment names a proxy (the SDK's default client honours
    it; this transport does not speak to proxies)."""
    if urllib.request.getproxies():
        return None
    from scriptorium.llm.sdk_http import http_module

    http = http_module(sdk)
    sync_class, async_class = transport_classes(http)
    if is_async:
        return sdk.DefaultAsyncHttpxClient(transport=async_class())
    return sdk.DefaultHttpxClient(transport=sync_class())


def _build(http: Any) -> tuple[type[Any], type[Any]]:  # two transports, one HTTP library
    h11 = _h11()

    def _failure(err: BaseException, request: Any, phase: str) -> Exception:
        """The HTTP library's error for ``err`` met while ``phase`` (connect, write, read)."""
        if isinstance(err, h11.RemoteProtocolError | h11.LocalProtocolError):
            broken: Exception = http.RemoteProtocolError(
                str(err) or "the response broke HTTP", request=request
            )
            return broken
        if isinstance(err, socket.timeout | TimeoutError):
            kind = {"connect": http.ConnectTimeout, "write": http.WriteTimeout}.get(
                phase, http.ReadTimeout
            )
            return kind(f"timed out while {phase}ing", request=request)  # type: ignore[no-any-return]
        kind = {"connect": http.ConnectError, "write": http.WriteError}.get(phase, http.ReadError)
        return kind(f"{type(err).__name__} while {phase}ing", request=request)  # type: ignore[no-any-return]

    def _disconnected(request: Any) -> Exception:
        return http.RemoteProtocolError(  # type: ignore[no-any-return]
            "the server closed the connection without a complete response", request=request
        )

    def _drained(state: Any, ready: Any) -> bool:
        """Whether a response closed before its end can still be read to its end from what has
        already arrived (a stream's caller stops at the last event; the chunked terminator is
        right behind it): then its connection can be reused. Reads nothing that is not there
        yet, and at most :data:`_DRAIN_LIMIT` bytes."""
        left = _DRAIN_LIMIT
        try:
            while True:
                event = state.next_event()
                if isinstance(event, h11.EndOfMessage):
                    return True
                if event is h11.NEED_DATA:
                    data = ready()
                    if not data or left <= 0:
                        return False
                    left -= len(data)
                    state.receive_data(data)
                elif not isinstance(event, h11.Data):
                    return False
        except Exception:  # a broken tail: the connection is closed, as without draining
            return False

    # --- sync -----------------------------------------------------------------------------------

    class _Connection:
        __slots__ = ("idle_since", "origin", "sock", "state")

        def __init__(self, origin: tuple[str, str, int], sock: socket.socket) -> None:
            self.origin = origin
            self.sock = sock
            self.state = h11.Connection(our_role=h11.CLIENT)
            self.idle_since = 0.0

        def close(self) -> None:
            try:
                self.sock.close()
            except OSError:
                pass

    class PooledTransport(http.BaseTransport):  # type: ignore[misc]  # the base class is the SDK's HTTP library's, known at run time
        """A sync transport over the pool (see the module)."""

        def __init__(
            self,
            *,
            max_connections: int = MAX_CONNECTIONS,
            max_keepalive: int = MAX_KEEPALIVE,
            keepalive_expiry: float = KEEPALIVE_EXPIRY_S,
        ) -> None:
            self._idle: _IdleStacks[_Connection] = _IdleStacks(max_keepalive, keepalive_expiry)
            self._lock = threading.Lock()
            self._slots = threading.BoundedSemaphore(max_connections)
            self._ssl: ssl.SSLContext | None = None
            self._closed = False
            #: Connections opened so far (tests and benchmarks read it).
            self.opened = 0

        @property
        def idle(self) -> int:
            """Connections waiting in the pool."""
            return self._idle.count

        def _context(self) -> ssl.SSLContext:
            if self._ssl is None:
                self._ssl = http.create_ssl_context()
            return self._ssl

        def _take(self, origin: tuple[str, str, int]) -> _Connection | None:
            now = time.monotonic()
            while True:
                with self._lock:
                    conn = self._idle.pop(origin)
                if conn is None:
                    return None
                if self._idle.fresh(conn, now) and not _readable(conn.sock):
                    return conn
                conn.close()

        def _give_back(self, conn: _Connection) -> None:
            state = conn.state
            if self._closed or state.our_state is not h11.DONE or state.their_state is not h11.DONE:
                conn.close()
                return
            state.start_next_cycle()
            conn.idle_since = time.monotonic()
            with self._lock:
                dropped = self._idle.push(conn)
            for old in dropped:
                old.close()

        def _connect(self, origin: tuple[str, str, int], timeout: float | None) -> _Connection:
            scheme, host, port = origin
            with self._lock:
                self.opened += 1
            sock = socket.create_connection((host, port), timeout=timeout)
            try:
                _socket_options(sock)
                if scheme == "https":
                    sock = self._context().wrap_socket(sock, server_hostname=host)
            except BaseException:
                sock.close()
                raise
            return _Connection(origin, sock)

        def handle_request(self, request: Any) -> Any:
            connect_s, read_s, write_s, pool_s = _timeouts(request)
            if not self._slots.acquire(timeout=pool_s if pool_s is not None else -1):
                raise http.PoolTimeout("no connection free in time", request=request)
            conn: _Connection | None = None
            try:
                origin = _origin(request)
                conn = self._take(origin)
                if conn is None:
                    try:
                        conn = self._connect(origin, connect_s)
                    except Exception as err:
                        raise _failure(err, request, "connect") from err
                try:
                    conn.sock.settimeout(write_s)
                    self._write(conn, request)
                except Exception as err:
                    raise _failure(err, request, "write") from err
                conn.sock.settimeout(read_s)
                event = self._next(conn, request)
                while isinstance(event, h11.InformationalResponse):
                    event = self._next(conn, request)
                if not isinstance(event, h11.Response):
                    raise _disconnected(request)
            except BaseException:
                if conn is not None:
                    conn.close()
                self._slots.release()
                raise
            return http.Response(
                status_code=event.status_code,
                headers=event.headers.raw_items(),
                stream=_Body(self, conn, request),
                extensions={"http_version": b"HTTP/1.1", "reason_phrase": event.reason},
            )

        @staticmethod
        def _write(conn: _Connection, request: Any) -> None:
            """The head and the body, as the body's stream gives it: a body in one piece goes
            out with the head in one write; a streamed one (the media splicer's base64 chunks)
            chunk by chunk, never joined."""
            state, sock = conn.state, conn.sock
            pending = state.send(_head(h11, request))
            for chunk in request.stream:
                if chunk:
                    if pending:
                        sock.sendall(pending)
                    pending = state.send(h11.Data(data=chunk))
            sock.sendall(pending + state.send(h11.EndOfMessage()))

        def _next(self, conn: _Connection, request: Any) -> Any:
            state = conn.state
            while True:
                try:
                    event = state.next_event()
                    if event is h11.NEED_DATA:
                        state.receive_data(conn.sock.recv(_READ_SIZE))
                        continue
                except Exception as err:
                    raise _failure(err, request, "read") from err
                if event is h11.PAUSED or isinstance(event, h11.ConnectionClosed):
                    raise _disconnected(request)
                return event

        def _finished(self, conn: _Connection, complete: bool) -> None:
            if complete:
                self._give_back(conn)
            else:
                conn.close()
            self._slots.release()

        def close(self) -> None:
            with self._lock:
                self._closed = True
                idle = self._idle.drain()
            for conn in idle:
                conn.close()

        def __del__(self) -> None:
            # A client dropped without close() (the SDK's own wrapper closes in its __del__):
            # its idle sockets are closed here rather than left to warn one by one.
            with contextlib.suppress(Exception):
                self.close()

    class _Body(http.SyncByteStream):  # type: ignore[misc]  # the base class is the SDK's HTTP library's, known at run time
        """A response body, read as it arrives; its connection is given back at its end."""

        def __init__(self, pool: PooledTransport, conn: _Connection, request: Any) -> None:
            self._pool = pool
            self._conn: _Connection | None = conn
            self._request = request

        def __iter__(self) -> Iterator[bytes]:
            conn = self._conn
            if conn is None:
                return
            complete = False
            try:
                while True:
                    event = self._pool._next(conn, self._request)
                    if isinstance(event, h11.Data):
                        yield bytes(event.data)
                    elif isinstance(event, h11.EndOfMessage):
                        complete = True
                        return
            finally:
                # Left early (the reader stopped at its last event, and dropping the iterator
                # closed it before the response was closed): finish from what is there.
                self._end(complete or self._drained())

        def _drained(self) -> bool:
            conn = self._conn
            return conn is not None and _drained(conn.state, lambda: _ready_bytes(conn.sock))

        def _end(self, complete: bool) -> None:
            conn, self._conn = self._conn, None
            if conn is not None:
                self._pool._finished(conn, complete)

        def close(self) -> None:
            self._end(self._drained())

    def _ready_bytes(sock: socket.socket) -> bytes | None:
        """Bytes the socket has now, without waiting (None: nothing yet)."""
        if _readable(sock):
            try:
                return sock.recv(_READ_SIZE)
            except OSError:
                return b""
        return None

    # --- async ----------------------------------------------------------------------------------

    class _Wire(asyncio.Protocol):
        """One async connection's socket end: bytes received wait here until read."""

        def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
            self.loop = loop
            self.transport: asyncio.Transport | None = None
            self.chunks: collections.deque[bytes] = collections.deque()
            self.buffered = 0
            self.eof = False
            self.error: BaseException | None = None
            self.waiter: asyncio.Future[None] | None = None
            self.writable: asyncio.Future[None] | None = None
            self.paused = False

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            self.chunks.append(data)
            self.buffered += len(data)
            if self.buffered > _HIGH_WATER and self.transport is not None:
                self.transport.pause_reading()
            self._wake()

        def eof_received(self) -> bool | None:
            self.eof = True
            self._wake()
            return None

        def connection_lost(self, exc: Exception | None) -> None:
            self.eof = True
            self.error = exc
            self._wake()
            if self.writable is not None and not self.writable.done():
                self.writable.set_result(None)

        def pause_writing(self) -> None:
            self.paused = True

        def resume_writing(self) -> None:
            self.paused = False
            if self.writable is not None and not self.writable.done():
                self.writable.set_result(None)

        def _wake(self) -> None:
            waiter = self.waiter
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

        async def read(self, timeout: float | None) -> bytes:
            """The next bytes received (b"" at the end), waiting at most ``timeout``."""
            if not self.chunks and not self.eof:
                self.waiter = self.loop.create_future()
                try:
                    async with asyncio.timeout(timeout):
                        await self.waiter
                finally:
                    self.waiter = None
            if self.chunks:
                data = self.chunks.popleft()
                self.buffered -= len(data)
                if self.buffered <= _HIGH_WATER // 2 and self.transport is not None:
                    self.transport.resume_reading()
                return data
            if self.error is not None:
                raise self.error
            return b""

        async def write(self, data: bytes, timeout: float | None) -> None:
            transport = self.transport
            if transport is None or transport.is_closing():
                raise ConnectionResetError("the connection is closed")
            transport.write(data)
            if self.paused:
                self.writable = self.loop.create_future()
                try:
                    async with asyncio.timeout(timeout):
                        await self.writable
                finally:
                    self.writable = None
                if transport.is_closing():
                    raise ConnectionResetError("the connection closed while writing")

        def ready(self) -> bytes | None:
            """Bytes received and not read yet, without waiting (None: none)."""
            if self.chunks:
                data = self.chunks.popleft()
                self.buffered -= len(data)
                return data
            return b"" if self.eof else None

        def usable(self) -> bool:
            transport = self.transport
            return not (self.eof or self.chunks or transport is None or transport.is_closing())

        def abort(self) -> None:
            if self.transport is not None:
                self.transport.abort()

    class _AsyncConnection:
        __slots__ = ("idle_since", "origin", "state", "wire")

        def __init__(self, origin: tuple[str, str, int], wire: _Wire) -> None:
            self.origin = origin
            self.wire = wire
            self.state = h11.Connection(our_role=h11.CLIENT)
            self.idle_since = 0.0

        def close(self) -> None:
            self.wire.abort()

    class AsyncPooledTransport(http.AsyncBaseTransport):  # type: ignore[misc]  # the base class is the SDK's HTTP library's, known at run time
        """An async transport over the pool (see the module); its connections belong to the
        loop they were opened on (the SDK clients above it are kept per loop)."""

        def __init__(
            self,
            *,
            max_connections: int = MAX_CONNECTIONS,
            max_keepalive: int = MAX_KEEPALIVE,
            keepalive_expiry: float = KEEPALIVE_EXPIRY_S,
        ) -> None:
            self._idle: _IdleStacks[_AsyncConnection] = _IdleStacks(max_keepalive, keepalive_expiry)
            self._max_connections = max_connections
            self._slots: asyncio.Semaphore | None = None
            self._ssl: ssl.SSLContext | None = None
            self._closed = False
            #: Connections opened so far (tests and benchmarks read it).
            self.opened = 0

        @property
        def idle(self) -> int:
            """Connections waiting in the pool."""
            return self._idle.count

        def _take(self, origin: tuple[str, str, int]) -> _AsyncConnection | None:
            now = time.monotonic()
            while (conn := self._idle.pop(origin)) is not None:
                if self._idle.fresh(conn, now) and conn.wire.usable():
                    return conn
                conn.close()
            return None

        def _give_back(self, conn: _AsyncConnection) -> None:
            state = conn.state
            if (
                self._closed
                or state.our_state is not h11.DONE
                or state.their_state is not h11.DONE
                or not conn.wire.usable()
            ):
                conn.close()
                return
            state.start_next_cycle()
            conn.idle_since = time.monotonic()
            for old in self._idle.push(conn):
                old.close()

        async def _connect(
            self, origin: tuple[str, str, int], timeout: float | None
        ) -> _AsyncConnection:
            scheme, host, port = origin
            self.opened += 1
            loop = asyncio.get_running_loop()
            context = None
            if scheme == "https":
                if self._ssl is None:
                    self._ssl = http.create_ssl_context()
                context = self._ssl
            async with asyncio.timeout(timeout):
                transport, wire = await loop.create_connection(
                    lambda: _Wire(loop),
                    host,
                    port,
                    ssl=context,
                    server_hostname=host if context is not None else None,
                )
            sock = transport.get_extra_info("socket")
            if sock is not None:
                _socket_options(sock)
            return _AsyncConnection(origin, wire)

        async def handle_async_request(self, request: Any) -> Any:
            connect_s, read_s, write_s, pool_s = _timeouts(request)
            if self._slots is None:
                self._slots = asyncio.Semaphore(self._max_connections)
            try:
                async with asyncio.timeout(pool_s):
                    await self._slots.acquire()
            except TimeoutError:
                raise http.PoolTimeout("no connection free in time", request=request) from None
            conn: _AsyncConnection | None = None
            try:
                origin = _origin(request)
                conn = self._take(origin)
                if conn is None:
                    try:
                        conn = await self._connect(origin, connect_s)
                    except Exception as err:
                        raise _failure(err, request, "connect") from err
                try:
                    await self._write(conn, request, write_s)
                except Exception as err:
                    raise _failure(err, request, "write") from err
                event = await self._next(conn, request, read_s)
                while isinstance(event, h11.InformationalResponse):
                    event = await self._next(conn, request, read_s)
                if not isinstance(event, h11.Response):
                    raise _disconnected(request)
            except BaseException:  # cancelled included: a connection half used is not reused
                if conn is not None:
                    conn.close()
                self._slots.release()
                raise
            return http.Response(
                status_code=event.status_code,
                headers=event.headers.raw_items(),
                stream=_AsyncBody(self, conn, request, read_s),
                extensions={"http_version": b"HTTP/1.1", "reason_phrase": event.reason},
            )

        @staticmethod
        async def _write(conn: _AsyncConnection, request: Any, write_s: float | None) -> None:
            """As the sync transport writes: one write for a body in one piece, else chunk by
            chunk (each waiting while the socket's buffer is full)."""
            state, wire = conn.state, conn.wire
            pending = state.send(_head(h11, request))
            async for chunk in request.stream:
                if chunk:
                    if pending:
                        await wire.write(pending, write_s)
                    pending = state.send(h11.Data(data=chunk))
            await wire.write(pending + state.send(h11.EndOfMessage()), write_s)

        async def _next(self, conn: _AsyncConnection, request: Any, read_s: float | None) -> Any:
            state = conn.state
            while True:
                try:
                    event = state.next_event()
                    if event is h11.NEED_DATA:
                        state.receive_data(await conn.wire.read(read_s))
                        continue
                except Exception as err:
                    raise _failure(err, request, "read") from err
                if event is h11.PAUSED or isinstance(event, h11.ConnectionClosed):
                    raise _disconnected(request)
                return event

        def _finished(self, conn: _AsyncConnection, complete: bool) -> None:
            if complete:
                self._give_back(conn)
            else:
                conn.close()
            assert self._slots is not None
            self._slots.release()

        async def aclose(self) -> None:
            self._closed = True
            for conn in self._idle.drain():
                conn.close()

    class _AsyncBody(http.AsyncByteStream):  # type: ignore[misc]  # the base class is the SDK's HTTP library's, known at run time
        def __init__(
            self,
            pool: AsyncPooledTransport,
            conn: _AsyncConnection,
            request: Any,
            read_s: float | None,
        ) -> None:
            self._pool = pool
            self._conn: _AsyncConnection | None = conn
            self._request = request
            self._read_s = read_s

        async def __aiter__(self) -> AsyncIterator[bytes]:
            conn = self._conn
            if conn is None:
                return
            complete = False
            try:
                while True:
                    event = await self._pool._next(conn, self._request, self._read_s)
                    if isinstance(event, h11.Data):
                        yield bytes(event.data)
                    elif isinstance(event, h11.EndOfMessage):
                        complete = True
                        return
            finally:
                self._end(complete or self._drained())

        def _drained(self) -> bool:
            conn = self._conn
            return conn is not None and _drained(conn.state, conn.wire.ready)

        def _end(self, complete: bool) -> None:
            conn, self._conn = self._conn, None
            if conn is not None:
                self._pool._finished(conn, complete)

        async def aclose(self) -> None:
            self._end(self._drained())

    return PooledTransport, AsyncPooledTransport
