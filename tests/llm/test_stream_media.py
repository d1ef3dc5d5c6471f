"""Streamed runs send media exactly as run() does: the base64 spliced into the body as it is sent,
through both SDKs, so the server receives the same blocks."""

from __future__ import annotations

import asyncio
from pathlib import Path

from scriptorium import Engine
from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium._testing.openai_server import FakeOpenAIServer
from tests.llm.test_media_adapters import (  # the media project and servers, shared
    PDF,
    PNG,
    anthropic_server,
    b64,
    claude,
    compatible,
    engine,
    openai_server,
    project,
    sent_content,
)

__all__ = ["anthropic_server", "claude", "compatible", "engine", "openai_server", "project"]

ARTIFACTS = {"scan": "scan.png", "doc": "doc.pdf"}


def test_anthropic_stream_sends_the_blocks_run_sends(
    claude: Engine, anthropic_server: FakeAnthropicServer
) -> None:
    """The streamed request carries the image and document blocks with their real bytes."""
    result = claude.stream("look", profile="claude", artifacts=ARTIFACTS).result()
    assert result.output.text == "ok"
    blocks = sent_content(anthropic_server)
    assert blocks[0]["source"]["data"] == b64(PDF)
    assert blocks[2]["source"]["data"] == b64(PNG)
    assert anthropic_server.requests[0].body["stream"] is True


def test_async_stream_through_openai_sends_file_and_image_parts(
    compatible: Engine, openai_server: FakeOpenAIServer, project: Path
) -> None:
    """The async OpenAI stream carries the PDF file part and the image URL with their bytes."""
    asyncio.run(compatible.astream("look", profile="compatible", artifacts=ARTIFACTS).result())
    content = sent_content(openai_server)
    assert content[0]["file"]["file_data"] == f"data:application/pdf;base64,{b64(PDF)}"
    assert content[2]["image_url"]["url"] == f"data:image/png;base64,{b64(PNG)}"
