"""``scriptorium mcp``: the project's prompts as a Model Context Protocol server.

Over stdio (the default, what a desktop client starts) only the protocol goes to stdout; logs go
to stderr. Over HTTP (``--transport http``) it is the SDK's streamable HTTP transport at ``/mcp``,
on 127.0.0.1 unless told otherwise. ``--token-env VAR`` names the environment variable holding a
bearer token every HTTP request must carry (never the token itself on the command line, where the
process list shows it); listening off loopback without one is refused before the socket opens.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import TYPE_CHECKING, Any

from scriptorium._version import install_hint
from scriptorium.cli.output import Reporter
from scriptorium.cli.parser import UsageError

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = ["cmd_mcp"]


def _token(args: argparse.Namespace) -> str | None:
    from scriptorium.llm.model import given_key
    from scriptorium.profile.model import variable_name_problem

    if args.token_env is None:
        return None
    problem = variable_name_problem("--token-env", args.token_env)
    if problem is not None:
        raise UsageError(problem)
    token = given_key(os.environ.get(args.token_env))
    if token is None:
        raise UsageError(
            f"--token-env: environment variable {args.token_env} is unset or empty "
            "(it must hold the bearer token clients send)"
        )
    return token


def cmd_mcp(args: argparse.Namespace, reporter: Reporter) -> int:
    """Serve until the client closes stdin (stdio) or SIGINT/SIGTERM (http)."""
    from scriptorium.cli.serve import is_loopback

    if args.transport == "stdio" and args.token_env is not None:
        raise UsageError(
            "--token-env is for --transport http: over stdio only the client that started "
            "the server talks to it"
        )
    token = _token(args)
    if args.transport == "http" and token is None and not is_loopback(args.host):
        raise UsageError(
            f"refusing to listen on {args.host} without a token: name the variable holding "
            "one with --token-env, or listen on 127.0.0.1"
        )
    if args.concurrency is not None and args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    try:
        from scriptorium.mcp import create_server
    except ModuleNotFoundError as err:
        raise UsageError(f"scriptorium mcp needs the 'mcp' extra: {install_hint('mcp')}") from err
    from scriptorium.cli.commands import make_engine

    engine = make_engine(args)
    if args.profile is not None:
        # A profile that does not load is said now (exit 4), not on every request.
        engine.load_profile(args.profile)
    limit = {} if args.concurrency is None else {"concurrency": args.concurrency}
    server = create_server(
        engine, profile=args.profile, tools_per_prompt=args.tools_per_prompt, **limit
    )
    if args.transport == "stdio":
        return _serve_stdio(server)
    return _serve_http(server, args, token, reporter)


def _serve_stdio(server: Server[Any]) -> int:
    import anyio
    from mcp.server.stdio import stdio_server

    async def serve() -> None:
        logging.getLogger("scriptorium.mcp").info("serving MCP over stdio")
        # While it serves, the SDK points fd 1 at stderr: nothing stray can corrupt the protocol.
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)
    return 0


def _serve_http(
    server: Server[Any], args: argparse.Namespace, token: str | None, reporter: Reporter
) -> int:
    from scriptorium.cli.serve import serve_app
    from scriptorium.mcp.http import MCP_PATH, http_app

    def announce(origin: str) -> None:
        # Said always (like a server's first line), on stderr: where to point a client.
        guarded = " (bearer token required)" if token else ""
        reporter.err.write(f"scriptorium: serving MCP on {origin}{MCP_PATH}{guarded}\n")
        reporter.err.flush()

    app = http_app(server, host=args.host, token=token)
    # No access lines (they would go to stdout, the protocol's); the MCP log (-v) says what ran.
    return serve_app(
        app, args.host, args.port, reporter, announce, lifespan="on", log_level="warning"
    )
