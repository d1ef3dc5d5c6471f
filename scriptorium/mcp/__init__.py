"""The prompts as a Model Context Protocol server (``scriptorium mcp``).

    from scriptorium import Engine
    from scriptorium.mcp import create_server
    server = create_server(Engine("project"))   # the official SDK's low-level Server

Each prompt file is an MCP prompt (its typed inputs and text artifacts as arguments, rendered as
``prepare`` renders) and can be run through the engine by the ``run_prompt`` tool (validation,
repair, fallbacks, rate limits). Needs the ``mcp`` extra (the official ``mcp`` SDK).
"""

from __future__ import annotations

from scriptorium._version import install_hint

try:
    from scriptorium.mcp.server import create_server
except ModuleNotFoundError as err:  # pragma: no cover - exercised without the extra installed
    missing = err.name or ""
    if missing not in {"mcp", "mcp_types"} and not missing.startswith(("mcp.", "mcp_types.")):
        raise
    raise ModuleNotFoundError(
        f"scriptorium.mcp needs the 'mcp' extra: {install_hint('mcp')}", name=err.name
    ) from err

__all__ = ["create_server"]
