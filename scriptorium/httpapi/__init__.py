"""The HTTP API (``scriptorium serve``): prompts as a service over an Engine.

    from scriptorium import Engine
    from scriptorium.httpapi import create_app
    app = create_app(Engine("project"), token="s3cret")   # any ASGI server runs it

Needs the ``http`` extra (Starlette, uvicorn). Routes: ``POST /v1/runs``, ``POST /v1/prepare``,
``GET /v1/prompts``, ``GET /v1/prompts/{id}``, ``GET /v1/profiles``, ``GET /healthz``,
``GET /openapi.json``.
"""

from __future__ import annotations

from scriptorium._version import install_hint

try:
    from scriptorium.httpapi.app import ACCESS_LOGGER, create_app
except ModuleNotFoundError as err:  # pragma: no cover - exercised without the extra installed
    if err.name not in {"starlette", "uvicorn"} and not (err.name or "").startswith("starlette."):
        raise
    raise ModuleNotFoundError(
        f"scriptorium.httpapi needs the 'http' extra: {install_hint('http')}",
        name=err.name,
    ) from err

__all__ = ["ACCESS_LOGGER", "create_app"]
