"""OTel over a run that fell back: one ``chat`` span per generation, each with the provider and
model of its own profile's request, under one run span that names the profile that answered."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from scriptorium import Engine
from scriptorium.observe import OTelObserver
from tests.e2e.fallback_support import (
    BACKUP_MODEL,
    GPT_MODEL,
    PRIMARY_MODEL,
    Servers,
    drop_engines,
    keys,
    servers,
)


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[Servers]:
    with servers(tmp_path) as running:
        yield running
    drop_engines()


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_each_generation_of_each_profile_is_its_own_chat_span(loop: Servers) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observer = OTelObserver(tracer_provider=provider, env={})
    loop.primary.fail(529)
    loop.backup.fail(500)
    loop.gpt.reply("Hi!")
    result = Engine(loop.root, env=keys(), observer=observer).run("hello")
    provider.shutdown()
    spans = list(exporter.get_finished_spans())
    [run] = [s for s in spans if s.name.startswith("run ")]
    chats = sorted((s for s in spans if s is not run), key=lambda s: s.start_time or 0)
    assert [
        (_attrs(c)["gen_ai.provider.name"], _attrs(c)["gen_ai.request.model"]) for c in chats
    ] == [("anthropic", PRIMARY_MODEL), ("anthropic", BACKUP_MODEL), ("openai", GPT_MODEL)]
    assert [c.name for c in chats] == [
        f"chat {m}" for m in (PRIMARY_MODEL, BACKUP_MODEL, GPT_MODEL)
    ]
    assert [_attrs(c).get("error.type") is not None for c in chats] == [True, True, False]
    for chat in chats:
        assert chat.parent is not None
        assert chat.parent.span_id == run.context.span_id
    attrs = _attrs(run)
    assert attrs["scriptorium.fallbacks"] == 2
    assert attrs["scriptorium.profile"] == "gpt"
    assert attrs["scriptorium.request_hash"] == result.prepared.request_hash
