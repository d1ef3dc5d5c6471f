"""The streamable HTTP transport: the SDK's ASGI app, behind a bearer token when one is given.

The token is compared in constant time on every request (a wrong or missing one is a 401 with
``WWW-Authenticate: Bearer``, before the SDK sees anything). On a loopback address the SDK's own
DNS-rebinding protection stays on: a page in a browser cannot reach the server through a name
that resolves to 127.0.0.1.
"""

from __future__ import annotations

import hmac
import json
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Receive, Scope, Send

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = ["MCP_PATH", "BearerGuard", "http_app"]

#: Where the MCP endpoint is served (the SDK's default path).
MCP_PATH = "/mcp"


class BearerGuard:
    """An ASGI layer that lets through only requests with ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    def _authorized(self, scope: Scope) -> bool:
        given = b""
        for name, value in scope.get("headers", ()):
            if name.lower() == b"authorization":
                given = value
                break
        return hmac.compare_digest(given, self._expected)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {"error": {"code": "unauthorized", "message": "a valid bearer token is required"}}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="scriptorium"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def http_app(server: Server[Any], *, host: str = "127.0.0.1", token: str | None = None) -> ASGIApp:
    """The ASGI app serving ``server`` at :data:`MCP_PATH` (its lifespan runs the SDK's session
    manager: serve it with lifespan on). ``host`` is where it listens: a loopback host keeps the
    SDK's DNS-rebinding protection; ``token`` requires that bearer token on every request."""
    app: ASGIApp = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    return app if token is None else BearerGuard(app, token)
