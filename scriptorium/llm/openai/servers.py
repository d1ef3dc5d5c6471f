"""Local model servers that speak Chat Completions, each with its own quirks: a profile with an
``endpoint`` says which one it talks to with ``options.server`` (``ollama``, ``vllm``,
``llamacpp``, ``lmstudio``, or ``generic``, the default).

The dated table :data:`SERVERS` says, per server, which structured-output forms it takes, whether
it enforces a schema, where it puts reasoning text and which usage fields it fills. The adapter
honours it when it builds a body (:func:`structured_format`); ``check`` warns about a
``json_schema`` prompt on a server listed as not enforcing (:func:`enforcement_warning`). Whatever
the table says, every answer is validated locally: a server's claim is never trusted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from scriptorium._suggest import did_you_mean

__all__ = [
    "SERVERS",
    "SERVERS_DATE",
    "SERVER_VALUES",
    "Server",
    "enforcement_warning",
    "server_of",
    "server_problems",
]

SERVERS_DATE = "2026-11"

#: Whether a server holds a model to a JSON schema it is given: ``yes``; ``partial`` (it tries,
#: and answers unconstrained when it cannot); ``no``; ``unknown`` (a server the table does not
#: describe).
Enforces = Literal["yes", "partial", "no", "unknown"]


@dataclass(frozen=True)
class Server:
    """One server's row of the table."""

    name: str
    #: ``response_format`` types it takes (``json_schema``, ``json_object``).
    forms: tuple[str, ...]
    enforces: Enforces
    #: ``json_schema.strict`` is sent ``true`` with the whole schema (the server constrains every
    #: schema it is given; OpenAI's strict-mode reduction is not needed), instead of strict only
    #: when the schema reduces.
    strict_always: bool
    #: The message (and delta) members its reasoning text comes in.
    reasoning: tuple[str, ...]
    #: The usage members it fills.
    usage: tuple[str, ...]
    #: Why the row says so (shown by ``check`` and in the docs).
    note: str


_BASIC_USAGE = ("prompt_tokens", "completion_tokens", "total_tokens")

#: The servers' quirks (table of 2026-11, from each server's documentation and release notes).
SERVERS: Mapping[str, Server] = {
    "ollama": Server(
        "ollama",
        ("json_schema", "json_object"),
        "yes",
        False,
        ("reasoning",),
        _BASIC_USAGE,
        "Ollama's own server turns a schema into a grammar and enforces it; Ollama Cloud "
        "(ollama.com) accepts a schema and does not enforce it",
    ),
    "vllm": Server(
        "vllm",
        ("json_schema", "json_object"),
        "yes",
        True,
        ("reasoning_content", "reasoning"),
        (*_BASIC_USAGE, "prompt_tokens_details.cached_tokens"),
        "vLLM constrains decoding to every json_schema it is given (strict is sent true; a "
        "schema reduced for OpenAI's strict mode is not needed)",
    ),
    "llamacpp": Server(
        "llamacpp",
        ("json_schema", "json_object"),
        "partial",
        False,
        ("reasoning_content",),
        _BASIC_USAGE,
        "llama.cpp's server turns a schema into a grammar and answers unconstrained when it "
        "cannot build one",
    ),
    "lmstudio": Server(
        "lmstudio",
        ("json_schema",),
        "yes",
        False,
        ("reasoning_content", "reasoning"),
        _BASIC_USAGE,
        "LM Studio refuses response_format json_object with 400: a json prompt is sent a "
        "permissive json_schema",
    ),
    "generic": Server(
        "generic",
        ("json_schema", "json_object"),
        "unknown",
        False,
        ("reasoning_content", "reasoning"),
        _BASIC_USAGE,
        "an OpenAI-compatible server the table does not describe: sent what OpenAI takes",
    ),
}
SERVER_VALUES = tuple(SERVERS)
_CLOUD_OLLAMA = "ollama.com"


def server_problems(options: Mapping[str, Any]) -> list[str]:
    """What is wrong with ``options.server`` (for ``check``; refused when a request is built)."""
    value = options.get("server")
    if value is None or value in SERVERS:
        return []
    hint = did_you_mean(str(value), SERVER_VALUES)
    return [f"options.server {str(value)[:40]!r} must be one of {', '.join(SERVER_VALUES)}{hint}"]


def server_of(options: Mapping[str, Any]) -> Server:
    """The row of the server a profile's ``options`` name (``generic`` when none, or when the
    name is unknown: :func:`server_problems` reports that)."""
    return SERVERS.get(str(options.get("server", "generic")), SERVERS["generic"])


def _enforces(server: Server, endpoint: str | None) -> Enforces:
    host = (urlsplit(endpoint).hostname or "") if endpoint else ""
    if server.name == "ollama" and (host == _CLOUD_OLLAMA or host.endswith("." + _CLOUD_OLLAMA)):
        return "no"
    return server.enforces


def enforcement_warning(endpoint: str | None, options: Mapping[str, Any]) -> str | None:
    """Why a ``json_schema`` output may come back unconstrained from this profile's server (None:
    the table lists it as enforcing, or does not know)."""
    if endpoint is None or "server" not in options:
        return None
    server = server_of(options)
    enforces = _enforces(server, endpoint)
    if enforces not in ("no", "partial"):
        return None
    how = "does not enforce" if enforces == "no" else "may not enforce"
    return (
        f"options.server {server.name} {how} a json_schema ({server.note}); the answer is still "
        "validated here, and `scriptorium verify --structured` shows what the server does"
    )
