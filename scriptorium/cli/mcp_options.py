"""The ``mcp`` subcommand's options (its command is :mod:`scriptorium.cli.mcp`, which the parser
does not import: the options are all it needs to know)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["add_mcp_parser"]


def add_mcp_parser(commands: Any, common: Callable[..., None]) -> None:
    """The ``mcp`` subcommand's options (``common`` adds ``--root``, ``--json`` and ``-v``)."""
    mcp = commands.add_parser(
        "mcp",
        help="serve the prompts to MCP clients (agents, IDEs) over stdio or streamable HTTP",
    )
    mcp.add_argument(
        "-p",
        "--profile",
        help="the profile every prompt renders and runs on (default: each prompt's own; a "
        "run_prompt call may name another)",
    )
    mcp.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default: for a client that starts the server) or http (streamable HTTP "
        "at /mcp)",
    )
    mcp.add_argument(
        "--host", default="127.0.0.1", help="with --transport http: address (default: 127.0.0.1)"
    )
    mcp.add_argument(
        "--port", type=int, default=8000, help="with --transport http: port (default: 8000)"
    )
    mcp.add_argument(
        "--token-env",
        metavar="VAR",
        help="with --transport http: the environment variable holding the bearer token every "
        "request must carry (required to listen off loopback)",
    )
    mcp.add_argument(
        "--repair",
        action="store_true",
        help="repair invalid JSON output with the model (at least one attempt per run)",
    )
    mcp.add_argument(
        "--concurrency",
        type=int,
        default=None,
        metavar="N",
        # None: create_server's own default, the one place it is set.
        help="runs in flight at once; the rest wait (default: 8)",
    )
    mcp.add_argument(
        "--tools-per-prompt",
        action="store_true",
        help="also offer each prompt as its own tool, run_<id> (with / as _), typed by the "
        "prompt's inputs and output schemas",
    )
    common(mcp, json_help="report a failure to start as JSON")
