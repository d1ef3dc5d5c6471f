"""The fake OpenAI server the adapter's tests share: one per module, cleared before each test,
answering only what a test scripts (``default_text=None``). A module needing another fake
(Azure's, one with a default answer) defines its own ``shared_server``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scriptorium._testing.openai_server import FakeOpenAIServer


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default_text=None) as fake:
        yield fake


@pytest.fixture
def server(shared_server: FakeOpenAIServer) -> FakeOpenAIServer:
    shared_server.clear()
    return shared_server
