"""What every route shares: the Engine, the policy the server was started with, and the gate that
bounds how many runs are in flight.

One ``Service`` per app. The Engine is shared by every request: its repositories cache parsed files
and compiled schemas, and its router keeps one SDK client per endpoint and key for each event loop,
so a run over HTTP costs what a run through the library costs.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scriptorium.engine import Engine

__all__ = ["Service"]


@dataclass
class Service:
    """The app's state: the Engine and the limits and permissions of this server."""

    engine: Engine
    token: str | None
    max_body_bytes: int
    concurrency: int
    allow_client_keys: bool
    allow_artifact_refs: bool
    # One semaphore per event loop: an asyncio primitive belongs to the loop that first waits on
    # it, and an app may be driven by several loops in turn (tests, a server restarted in-process).
    #: The server's directories as absolute paths, shown as ``.`` in error messages.
    roots: tuple[str, ...] = ()
    _openapi: dict[str, Any] | None = field(default=None, repr=False)
    _gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = field(
        default_factory=weakref.WeakKeyDictionary, repr=False
    )

    def _gate(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            gate = self._gates[loop] = asyncio.Semaphore(self.concurrency)
        return gate

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the ``concurrency`` run slots; waits while all are taken."""
        async with self._gate():
            yield

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI document of this server (built on first use, then kept)."""
        if self._openapi is None:
            from scriptorium.httpapi.openapi import build_openapi

            self._openapi = build_openapi(
                secured=self.token is not None,
                client_keys=self.allow_client_keys,
                artifact_refs=self.allow_artifact_refs,
                repairs=self.engine.repair,
            )
        return self._openapi
