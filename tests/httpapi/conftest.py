"""One loopback Anthropic server and one project on disk for the whole HTTP API suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scriptorium.testing import FakeAnthropicServer
from tests.httpapi.project import write_project


@pytest.fixture(scope="session")
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    """Started once; its script is cleared before every test that asks for it."""
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture
def server(anthropic_server: FakeAnthropicServer) -> FakeAnthropicServer:
    anthropic_server.reset()
    return anthropic_server


@pytest.fixture(scope="session")
def project(
    tmp_path_factory: pytest.TempPathFactory, anthropic_server: FakeAnthropicServer
) -> Path:
    return write_project(tmp_path_factory.mktemp("http-project"), anthropic_server.url)
