"""Runs in flight: at most ``concurrency`` at once, and a client that cancels a call cancels its
run (in flight, or still waiting for a slot)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from scriptorium.llm.model import LLMRequest
from scriptorium.mcp import create_server
from scriptorium.testing import FakeClient
from tests.mcp.project import engine_for, run_async, write_project

GREET = {"prompt": "greet", "inputs": {"name": "Ada"}}


def test_at_most_concurrency_runs_are_in_flight(tmp_path: Path) -> None:
    in_flight = 0
    most = 0

    async def answer(request: LLMRequest) -> str:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.05)
        in_flight -= 1
        return "hi"

    engine = engine_for(write_project(tmp_path), FakeClient([answer]))
    done: list[bool] = []

    async def session() -> None:
        async with Client(create_server(engine, concurrency=2)) as client:

            async def one() -> None:
                result = await client.call_tool("run_prompt", GREET)
                done.append(not result.is_error)

            async with anyio.create_task_group() as group:
                for _ in range(5):
                    group.start_soon(one)

    run_async(session)
    assert done == [True] * 5
    assert most == 2


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_cancelled_call_cancels_its_run_and_the_one_waiting_is_never_sent(
    tmp_path: Path, mode: str
) -> None:
    started = anyio.Event()
    cancelled: list[str] = []

    async def hang(request: LLMRequest) -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(request.prompt_id or "")
            raise
        return "never"

    fake = FakeClient([hang])
    engine = engine_for(write_project(tmp_path), fake)

    async def session() -> None:
        async with Client(create_server(engine, concurrency=1), mode=mode) as client:
            running = anyio.CancelScope()
            waiting = anyio.CancelScope()

            async def call(scope: anyio.CancelScope) -> None:
                with scope:
                    await client.call_tool("run_prompt", GREET)

            async with anyio.create_task_group() as group:
                group.start_soon(call, running)
                await started.wait()
                # The second waits for the only slot; it is cancelled first, so that over
                # JSON-RPC its cancellation is read before the slot frees.
                group.start_soon(call, waiting)
                await anyio.sleep(0.1)
                waiting.cancel()
                await anyio.sleep(0.1)
                running.cancel()
            # The server side learns of it (at once in process; by a notification over JSON-RPC).
            with anyio.fail_after(5):
                while not cancelled:
                    await anyio.sleep(0.01)
            await anyio.sleep(0.1)

    run_async(session)
    assert cancelled == ["greet"]
    assert fake.calls == 1


def test_every_run_goes_through_the_async_engine(tmp_path: Path) -> None:
    """The run is awaited on the server's loop (``arun``), not run in a thread: a scripted
    coroutine sees the loop it was called on."""
    loops: list[Any] = []

    async def answer(request: LLMRequest) -> str:
        loops.append(asyncio.get_running_loop())
        return "hi"

    engine = engine_for(write_project(tmp_path), FakeClient([answer]))

    async def session() -> Any:
        async with Client(create_server(engine)) as client:
            await client.call_tool("run_prompt", GREET)
            return asyncio.get_running_loop()

    loop = run_async(session)
    assert loops == [loop]
