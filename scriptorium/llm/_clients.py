"""SDK clients kept for reuse: one per (endpoint, key hash) for sync use, and for async use one per
event loop too, closed when that loop shuts down.

An async SDK client's connection pool belongs to the loop it first ran on. Dropping it when the
loop closes leaves its sockets to the garbage collector, which then complains about unclosed
transports on whatever loop comes next. So each loop gets a small async generator parked at a
``yield``: ``asyncio.run`` (through ``loop.shutdown_asyncgens``) closes every live async generator
before it closes the loop, and this one's ``finally`` closes that loop's clients while the loop
can still run their close.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import weakref
from collections.abc import AsyncGenerator, Callable, Hashable
from typing import Any

import scriptorium.llm.report as scope

__all__ = ["ClientCache", "key_hash"]

log = logging.getLogger("scriptorium.llm")

#: (where: a base URL or a provider's route, any hashable value; the key's hash).
Slot = tuple[Any, str]


def key_hash(key: str) -> str:
    """What stands for a key in a cache slot: its sha256, never the key itself."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


async def _close_at_loop_end(clients: dict[Slot, Any]) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        for client in list(clients.values()):
            try:
                await client.close()
            except Exception as err:  # best effort: a pool that cannot close is gone anyway
                log.debug(
                    "closing an SDK client at loop shutdown failed: %s",
                    type(err).__name__,
                    extra=scope.log_extra(),
                )
        clients.clear()


class _LoopClients:
    """The async clients of one loop, and the generator that closes them with the loop."""

    def __init__(self) -> None:
        self.clients: dict[Slot, Any] = {}
        self.closer: AsyncGenerator[None, None] | None = None


class ClientCache:
    """Reusable SDK clients built by ``make(is_async, key, where)``: ``where`` is a base URL, or
    whatever else a provider tells its SDK clients apart by (a cloud platform's route)."""

    def __init__(self, make: Callable[[bool, str, Any], Any]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._sync: dict[Slot, Any] = {}
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClients] = (
            weakref.WeakKeyDictionary()
        )

    def sync(self, base_url: Hashable, key: str) -> Any:
        """The sync client for this endpoint (or route) and key."""
        slot = (base_url, key_hash(key))
        client = self._sync.get(slot)
        if client is None:
            with self._lock:
                client = self._sync.get(slot)
                if client is None:
                    client = self._sync[slot] = self._make(False, key, base_url)
        return client

    async def async_(self, base_url: Hashable, key: str) -> Any:
        """The async client for this endpoint (or route) and key on the running loop."""
        loop = asyncio.get_running_loop()
        slot = (base_url, key_hash(key))
        entry = self._loops.get(loop)
        client = None if entry is None else entry.clients.get(slot)
        if client is not None:
            return client
        start_closer = None
        with self._lock:
            entry = self._loops.get(loop)
            if entry is None:
                entry = self._loops[loop] = _LoopClients()
                start_closer = entry.closer = _close_at_loop_end(entry.clients)
            client = entry.clients.get(slot)
            if client is None:
                client = entry.clients[slot] = self._make(True, key, base_url)
        if start_closer is not None:
            # The first step registers the generator with the loop (its asyncgen hooks).
            await start_closer.__anext__()
        return client

    def close(self) -> None:
        """Close the sync clients (they are rebuilt if used again)."""
        with self._lock:
            clients, self._sync = list(self._sync.values()), {}
        for client in clients:
            client.close()

    async def aclose(self) -> None:
        """Close the async clients of the running loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._loops.pop(loop, None)
        if entry is not None and entry.closer is not None:
            await entry.closer.aclose()
