"""``scriptorium serve``: the HTTP API under uvicorn.

The bearer token comes from ``SCRIPTORIUM_HTTP_TOKEN`` (never from the command line, where other
users of the machine could read it in the process list). Listening on anything but a loopback
address without a token is refused before the socket is opened.
"""

from __future__ import annotations

import argparse
import copy
import errno
import gc
import ipaddress
import logging
import os
import signal
import socket
from collections.abc import Callable
from types import FrameType
from typing import Any

from scriptorium._version import install_hint
from scriptorium.cli.output import Reporter
from scriptorium.cli.parser import UsageError

__all__ = [
    "EXIT_CANNOT_LISTEN",
    "TOKEN_ENV",
    "CannotListen",
    "cmd_serve",
    "is_loopback",
    "listen",
    "run_until_stopped",
]

#: The environment variable the server's bearer token is read from.
TOKEN_ENV = "SCRIPTORIUM_HTTP_TOKEN"


def is_loopback(host: str) -> bool:
    """Whether ``host`` only reaches this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        # A host name could resolve anywhere: treat it as reachable from outside.
        return False


#: The exit status of a server that cannot listen where it was told to.
EXIT_CANNOT_LISTEN = 1


class CannotListen(Exception):
    """The address is taken, not this machine's, or its host does not resolve."""


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``:``port``, opened here rather than by uvicorn, so a failure
    is said in our words with the address named (uvicorn logs its own line and exits 3, the status
    of a profile or key problem)."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError) as err:
        raise CannotListen(f"cannot listen on {where}: the host does not resolve") from err
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as err:
        sock.close()
        why = {
            errno.EADDRINUSE: "the address is already in use",
            errno.EADDRNOTAVAIL: "the address is not one of this machine's",
            errno.EACCES: "permission denied (a port below 1024 needs privileges)",
        }.get(err.errno or 0, err.strerror or type(err).__name__)
        raise CannotListen(f"cannot listen on {where}: {why}") from err
    return sock


def _log_config() -> dict[str, Any]:
    import uvicorn.config

    config: dict[str, Any] = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    # The app writes its own access line (request id, route, status, duration); uvicorn's would
    # repeat it with the query string and the client address.
    config["loggers"]["scriptorium.httpapi"] = {
        "handlers": ["default"],
        "level": "INFO",
        "propagate": False,
    }
    return config


def cmd_serve(args: argparse.Namespace, reporter: Reporter) -> int:
    """Serve the project over HTTP until SIGINT/SIGTERM (in-flight requests finish first)."""
    token = os.environ.get(TOKEN_ENV) or None
    if token is None and not is_loopback(args.host):
        raise UsageError(
            f"refusing to listen on {args.host} without a token: set {TOKEN_ENV}, "
            "or listen on 127.0.0.1"
        )
    if args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    try:
        import uvicorn  # noqa: F401  (the extra's server, missing: said here, before any work)

        from scriptorium.httpapi import create_app
    except ModuleNotFoundError as err:
        raise UsageError(
            f"scriptorium serve needs the 'http' extra: {install_hint('http')}"
        ) from err
    from scriptorium.engine import Engine
    from scriptorium.observe import observer_from_env

    # Without --artifact-root no file is read for a request: artifacts come by value.
    engine = Engine(
        args.root,
        artifact_root=args.artifact_root,
        observer=observer_from_env(),
        repair=args.repair,
    )
    app = create_app(
        engine, token=token, concurrency=args.concurrency, cors_origins=args.cors_origins
    )
    return serve_app(
        app,
        args.host,
        args.port,
        reporter,
        lambda origin: logging.getLogger("uvicorn.error").info("serving on %s", origin),
        log_config=_log_config(),
        lifespan="off",
    )


def serve_app(
    app: Any,
    host: str,
    port: int,
    reporter: Reporter,
    announce: Callable[[str], None],
    **config: Any,
) -> int:
    """Serve the ASGI ``app`` on ``host``:``port`` with uvicorn until it stops (see
    :func:`run_until_stopped`): the socket bound first (``cannot_listen``, exit
    :data:`EXIT_CANNOT_LISTEN`, when it cannot be), then ``announce("http://host:port")``.
    uvicorn writes no ``Server`` header and no access lines of its own; ``config`` adds the
    rest of its settings. ``serve`` and ``mcp`` both serve this way."""
    import uvicorn

    try:
        listening = listen(host, port)
    except CannotListen as err:
        reporter.error("cannot_listen", str(err))
        return EXIT_CANNOT_LISTEN
    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, server_header=False, access_log=False, **config)
    )
    bound_host, bound_port = listening.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    announce(f"http://{shown}:{bound_port}")
    return run_until_stopped(server, listening)


def run_until_stopped(server: Any, listening: Any) -> int:
    """Run the uvicorn ``server`` on the ``listening`` socket until it stops: 0 after a graceful
    stop (Ctrl-C or SIGTERM: the requests in flight finish first), else
    :data:`EXIT_CANNOT_LISTEN` when it never started. ``serve`` and ``mcp`` both end this way."""
    # uvicorn finishes the requests in flight on SIGTERM, then raises the signal again under the
    # handler that was there before it started: this one, so a requested stop exits 0.
    previous = signal.signal(signal.SIGTERM, _terminated)
    # What start-up built lives as long as the server: keep the collector from rescanning it.
    gc.collect()
    gc.freeze()
    try:
        server.run(sockets=[listening])
    except _Terminated:
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        listening.close()
    return 0 if server.started else EXIT_CANNOT_LISTEN


class _Terminated(Exception):
    """SIGTERM arrived after the server had shut down gracefully."""


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise _Terminated
