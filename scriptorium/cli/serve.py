"""``scriptorium serve``: the HTTP API under uvicorn.

The bearer token comes from ``SCRIPTORIUM_HTTP_TOKEN`` (never from the command line, where other
users of the machine could read it in the process list). Listening on anything but a loopback
address without a token is refused before the socket is opened.
"""

from __future__ import annotations

import argparse
import copy
import gc
import ipaddress
import os
import signal
from types import FrameType
from typing import Any

from scriptorium._version import install_hint
from scriptorium.cli.output import Reporter
from scriptorium.cli.parser import UsageError

__all__ = ["TOKEN_ENV", "cmd_serve", "is_loopback"]

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
        import uvicorn

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
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            access_log=False,
            log_config=_log_config(),
            lifespan="off",
            server_header=False,
        )
    )
    # uvicorn finishes the requests in flight on SIGTERM, then raises the signal again under the
    # handler that was there before it started: this one, so a requested stop exits 0.
    previous = signal.signal(signal.SIGTERM, _terminated)
    # What start-up built lives as long as the server: keep the collector from rescanning it.
    gc.collect()
    gc.freeze()
    try:
        server.run()
    except _Terminated:
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    # uvicorn reports a failure to start (port taken) in its log and by not starting.
    return 0 if server.started else 1


class _Terminated(Exception):
    """SIGTERM arrived after the server had shut down gracefully."""


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise _Terminated
