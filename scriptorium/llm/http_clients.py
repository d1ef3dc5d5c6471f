"""The HTTP clients the SDK clients send on: the SDKs' own, with one guard and the sync deadline.

Calls go through well-kept HTTP clients, so users' tooling sees them (vcrpy, libraries that mock
the SDK's HTTP client, tracers) and proxies work as in the SDK (``HTTPS_PROXY``, ``NO_PROXY``):

- sync clients: the SDK's ``DefaultHttpxClient`` (httpx, the SDK's own defaults);
- async clients: the SDK's official aiohttp backend ``DefaultAioHttpClient`` when it can be built
  (the ``fast`` extra installs aiohttp), else ``DefaultAsyncHttpxClient``.

What is ours, installed by :func:`guard` on the httpx connection pools of a client we built:

- **a connection holding bytes nobody asked for is never reused.** httpx's pool (httpcore) puts a
  connection back once its response is complete; bytes that came after the response in the same
  read (a second response written at once, garbage after ``Content-Length``) wait in the HTTP/1.1
  parser's buffer, and the next request on that connection would read them as its answer. The
  pool asks each idle connection ``has_expired()`` before it hands it out; ours also says yes when
  the parser holds such bytes, and the pool closes it. aiohttp already closes a connection with
  unread data (measured by the hostile-server tests), so it needs nothing;
- **the sync deadline** (``llm/deadline.py``): every connect, read and write of a sync pool waits
  at most until the current attempt's deadline, so a server dripping bytes cannot hold a sync call
  past ``timeout_s``. Async calls are bounded by ``asyncio.timeout`` instead, whatever the client.

Both hooks are the pool's documented extension points (its ``network_backend``, its connections'
``has_expired``), installed on the pool object of a client we built, never on a class: a user's
own httpx clients are untouched. They read httpcore's private state in one place each
(:func:`_holds_unasked_bytes`, the pool's ``_network_backend`` and ``create_connection``);
``tests/hardening/test_hostile_servers.py`` fails if a release moves them.
"""

from __future__ import annotations

import importlib
import logging
import weakref
from typing import Any

import scriptorium.llm.deadline as deadline

__all__ = ["guard", "sdk_http_client"]

log = logging.getLogger("scriptorium.llm")


def sdk_http_client(sdk: Any, is_async: bool) -> Any:
    """The HTTP client an SDK client built by scriptorium sends on (see the module)."""
    if is_async:
        aio = getattr(sdk, "DefaultAioHttpClient", None)
        if aio is not None:
            try:
                return aio()
            except (RuntimeError, ImportError):  # the SDK's aiohttp extra is not installed
                pass
        return guard(sdk.DefaultAsyncHttpxClient())
    client = guard(sdk.DefaultHttpxClient())
    # The SDK closes the HTTP client it builds itself when that is collected; one given to it
    # is the giver's to close. An SDK client dropped unclosed (an engine never closed) would
    # leave its sockets to the garbage collector, so its pools close when it is collected.
    weakref.finalize(client, _close_all, _transports(client))
    return client


def _transports(client: Any) -> list[Any]:
    """The transports of an httpx client: its default one and those mounted (proxies)."""
    found = [getattr(client, "_transport", None)]
    found.extend((getattr(client, "_mounts", None) or {}).values())
    return [transport for transport in found if transport is not None]


def _close_all(transports: list[Any]) -> None:
    for transport in transports:
        try:
            transport.close()
        except Exception as err:  # best effort at collection time
            log.debug("closing a dropped HTTP client failed: %s", type(err).__name__)


def guard(client: Any) -> Any:
    """Install the stray-bytes guard and the sync deadline on the httpx connection pools of
    ``client`` (its default transport and the proxy transports mounted from the environment);
    returns ``client``. A transport that has no httpcore pool (aiohttp, a mock) is left alone."""
    for transport in _transports(client):
        pool = getattr(transport, "_pool", None)
        if pool is None or not hasattr(pool, "create_connection"):
            continue
        _guard_pool(pool)
    return client


def _guard_pool(pool: Any) -> None:
    if getattr(pool, "_scriptorium_guarded", False):
        return
    make = pool.create_connection

    def create_connection(origin: Any) -> Any:
        return _Guarded(make(origin))

    pool.create_connection = create_connection
    if not type(pool).__name__.startswith("Async"):
        core = importlib.import_module(type(pool).__module__.split(".", 1)[0])
        pool._network_backend = _DeadlineBackend(pool._network_backend, core)
    pool._scriptorium_guarded = True


def _holds_unasked_bytes(connection: Any) -> bool:
    """Whether an idle pooled connection's HTTP/1.1 parser holds bytes received after the last
    response (h11's ``trailing_data``). The one read of httpcore's private state for the guard:
    its connections' ``_connection`` and the HTTP/1.1 connection's ``_h11_state``."""
    # A pooled connection holds its HTTP/1.1 connection; one through a forward proxy holds a
    # connection to the proxy, which holds it.
    inner = getattr(connection, "_connection", None)
    for _ in range(3):
        parser = getattr(inner, "_h11_state", None)
        if parser is not None:
            data, _closed = parser.trailing_data
            return bool(data)
        inner = getattr(inner, "_connection", None)
    return False


class _Guarded:
    """A pooled connection that counts as expired, so the pool closes it instead of reusing it,
    while it holds bytes nobody asked for. Everything else is the connection's own."""

    __slots__ = ("_inner",)

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def has_expired(self) -> bool:
        inner = self._inner
        if inner.has_expired():
            return True
        if inner.is_idle() and _holds_unasked_bytes(inner):
            log.debug("closing a pooled connection that holds bytes nobody asked for")
            return True
        return False

    def is_available(self) -> bool:
        return bool(self._inner.is_available()) and not self.has_expired()

    def __repr__(self) -> str:
        return repr(self._inner)


class _DeadlineBackend:
    """A sync network backend whose streams end every wait at the current deadline."""

    def __init__(self, inner: Any, core: Any) -> None:
        self._inner = inner
        self._core = core

    def _timeout(self, timeout: float | None, kind: str) -> float | None:
        bound = deadline.left(timeout)
        if bound is not None and bound <= 0:
            raise getattr(self._core, kind)("the run's deadline passed")
        return bound

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> Any:
        stream = self._inner.connect_tcp(
            host,
            port,
            timeout=self._timeout(timeout, "ConnectTimeout"),
            local_address=local_address,
            socket_options=socket_options,
        )
        return _DeadlineStream(stream, self)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> Any:
        stream = self._inner.connect_unix_socket(
            path, timeout=self._timeout(timeout, "ConnectTimeout"), socket_options=socket_options
        )
        return _DeadlineStream(stream, self)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _DeadlineStream:
    """A sync network stream whose reads and writes wait at most until the deadline."""

    __slots__ = ("_backend", "_inner")

    def __init__(self, inner: Any, backend: _DeadlineBackend) -> None:
        self._inner = inner
        self._backend = backend

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data: bytes = self._inner.read(max_bytes, self._backend._timeout(timeout, "ReadTimeout"))
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._backend._timeout(timeout, "WriteTimeout"))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> Any:
        stream = self._inner.start_tls(
            ssl_context, server_hostname, self._backend._timeout(timeout, "ConnectTimeout")
        )
        return _DeadlineStream(stream, self._backend)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)
