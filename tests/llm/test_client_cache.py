"""The SDK client cache: reuse per endpoint and key, and async clients closed with their loop."""

from __future__ import annotations

import asyncio

from scriptorium.llm._clients import ClientCache, key_hash


class Pool:
    """Stands in for an SDK client: records whether it was closed."""

    def __init__(self, is_async: bool, key: str, base_url: str) -> None:
        self.is_async, self.base_url, self.closed = is_async, base_url, False
        self.key_seen = key

    def close(self) -> None:
        self.closed = True


class AsyncPool(Pool):
    async def close(self) -> None:  # type: ignore[override]
        self.closed = True


def make(is_async: bool, key: str, base_url: str) -> Pool:
    return (AsyncPool if is_async else Pool)(is_async, key, base_url)


def test_sync_clients_are_reused_per_endpoint_and_key() -> None:
    """Same endpoint and key: one client; another key or endpoint: another client."""
    cache = ClientCache(make)
    first = cache.sync("http://127.0.0.1:1", "k1")
    assert cache.sync("http://127.0.0.1:1", "k1") is first
    assert cache.sync("http://127.0.0.1:1", "k2") is not first
    assert cache.sync("http://127.0.0.1:2", "k1") is not first
    cache.close()
    assert first.closed


def test_slots_hold_a_hash_of_the_key_not_the_key() -> None:
    """The cache's keys never contain the key value."""
    cache = ClientCache(make)
    cache.sync("http://127.0.0.1:1", "secret-key-value")
    assert all("secret-key-value" not in part for slot in cache._sync for part in slot)
    assert key_hash("secret-key-value") in {slot[1] for slot in cache._sync}


def test_async_clients_belong_to_their_loop_and_close_with_it() -> None:
    """Each asyncio.run gets its own client, and the loop's shutdown closes it."""
    cache = ClientCache(make)

    async def use() -> Pool:
        client: Pool = await cache.async_("http://127.0.0.1:1", "k")
        again: object = await cache.async_("http://127.0.0.1:1", "k")
        assert again is client
        return client

    first = asyncio.run(use())
    second = asyncio.run(use())
    assert first is not second
    assert first.closed
    assert second.closed


def test_aclose_closes_the_running_loops_clients_at_once() -> None:
    """aclose() closes this loop's clients without waiting for the loop to end."""
    cache = ClientCache(make)

    async def use() -> tuple[Pool, bool]:
        client: Pool = await cache.async_("http://127.0.0.1:1", "k")
        await cache.aclose()
        return client, client.closed

    _client, closed_inside = asyncio.run(use())
    assert closed_inside
