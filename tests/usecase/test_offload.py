"""Async runs keep their event loop free: preparing a request that carries much content and
judging a long output run in a worker thread; a small run stays on the loop (no thread hop)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from scriptorium.artifact.model import ArtifactContent
from scriptorium.prompt.jinja import JinjaRenderer
from scriptorium.prompt.model import RenderedPrompt
from scriptorium.promptdef.model import PromptDefinition
from scriptorium.testing import (
    FakeClient,
    FixedClock,
    MemoryArtifactReader,
    MemoryProfileRepository,
    MemoryPromptRepository,
    SequentialIds,
)
from scriptorium.usecase import Runner, RunRequest
from scriptorium.usecase.prepare import OFFLOAD_BYTES, heavy_to_prepare
from scriptorium.validate.model import OutputContract, ValidationResult
from scriptorium.validate.schema import SchemaValidator
from scriptorium.validate.validator import OFFLOAD_CHARS, heavy_to_validate
from tests.conftest import FILES, PROFILES, PROMPTS


class ThreadNoting:
    """Notes the thread each render and each validation ran in."""

    def __init__(self) -> None:
        self.render_threads: list[str] = []
        self.validate_threads: list[str] = []


class NotingRenderer(JinjaRenderer):
    def __init__(self, notes: ThreadNoting) -> None:
        super().__init__()
        self.notes = notes

    def render(self, definition: PromptDefinition, **kwargs: Any) -> RenderedPrompt:
        self.notes.render_threads.append(threading.current_thread().name)
        return super().render(definition, **kwargs)


class NotingValidator(SchemaValidator):
    def __init__(self, notes: ThreadNoting) -> None:
        super().__init__()
        self.notes = notes

    def validate(self, text: str, contract: OutputContract) -> ValidationResult:
        self.notes.validate_threads.append(threading.current_thread().name)
        return super().validate(text, contract)


def _runner(answers: list[str], notes: ThreadNoting) -> Runner:
    return Runner(
        prompts=MemoryPromptRepository(dict(PROMPTS)),
        profiles=MemoryProfileRepository(dict(PROFILES)),
        artifacts=MemoryArtifactReader(dict(FILES)),
        renderer=NotingRenderer(notes),
        client=FakeClient(list(answers)),
        validator=NotingValidator(notes),
        env={},
        clock=FixedClock(),
        new_id=SequentialIds(),
    )


def _loop_thread(run: Any) -> tuple[str, Any]:
    async def go() -> tuple[str, Any]:
        return threading.current_thread().name, await run()

    return asyncio.run(go())


def test_a_small_run_prepares_and_judges_on_the_loop() -> None:
    notes = ThreadNoting()
    runner = _runner(['{"name": "Ada", "email": "a@b.c"}'], notes)
    request = RunRequest(
        prompt_id="extract/contact", artifacts={"document": ArtifactContent("Ada")}
    )
    loop, result = _loop_thread(lambda: runner.arun(request))
    assert result.validation.valid
    assert notes.render_threads == [loop]
    assert notes.validate_threads == [loop]


def test_a_request_with_much_content_is_prepared_in_a_worker_thread() -> None:
    notes = ThreadNoting()
    runner = _runner(['{"name": "Ada", "email": "a@b.c"}'], notes)
    big = ArtifactContent("Ada <a@b.c> " + "x" * OFFLOAD_BYTES)
    request = RunRequest(prompt_id="extract/contact", artifacts={"document": big})
    loop, result = _loop_thread(lambda: runner.arun(request))
    assert result.validation.valid
    assert notes.render_threads
    assert notes.render_threads[0] != loop
    assert notes.validate_threads == [loop]  # the answer is short


@pytest.mark.parametrize("streamed", [False, True], ids=["arun", "astream"])
def test_a_long_output_is_judged_in_a_worker_thread(streamed: bool) -> None:
    notes = ThreadNoting()
    long_value = {"name": "Ada " + "y" * OFFLOAD_CHARS, "email": "a@b.c"}
    runner = _runner([json.dumps(long_value)], notes)
    request = RunRequest(prompt_id="extract/contact", artifacts={"document": ArtifactContent("x")})

    async def run() -> Any:
        if not streamed:
            return await runner.arun(request)
        return await runner.astream(request).result()

    loop, result = _loop_thread(run)
    assert result.validation.value == long_value
    assert notes.validate_threads
    assert notes.validate_threads[0] != loop
    assert notes.render_threads == [loop]


def test_the_weighing_is_what_the_rules_say() -> None:
    """File references are I/O; content and input text count by length; the text limit is the
    validator's."""
    assert heavy_to_prepare(RunRequest(prompt_id="p", artifacts={"a": "file.txt"}))
    assert not heavy_to_prepare(RunRequest(prompt_id="p", inputs={"t": "x" * 1000}))
    assert heavy_to_prepare(RunRequest(prompt_id="p", inputs={"t": ["x" * OFFLOAD_BYTES, "y"]}))
    assert heavy_to_prepare(RunRequest(prompt_id="p", inputs={"t": list(range(20_000))}))
    assert not heavy_to_validate("x" * OFFLOAD_CHARS)
    assert heavy_to_validate("x" * (OFFLOAD_CHARS + 1))
