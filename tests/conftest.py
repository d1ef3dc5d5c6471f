"""Shared fixtures: a small in-memory project and a factory for Runners over it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import pytest

from scriptorium.llm.client import AsyncClient, Client
from scriptorium.observe import Observer
from scriptorium.prompt.jinja import JinjaRenderer
from scriptorium.testing import (
    FixedClock,
    MemoryArtifactReader,
    MemoryProfileRepository,
    MemoryPromptRepository,
    SequentialIds,
)
from scriptorium.usecase import Runner
from scriptorium.usecase.repair import OutputRepairer
from scriptorium.validate.schema import SchemaValidator

CONTACT_SCHEMA = {
    "type": "object",
    "required": ["name", "email"],
    "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
    "additionalProperties": False,
}

PROMPTS: dict[str, str] = {
    "greet": """---
description: Greets someone
version: 1
profile: offline
inputs:
  type: object
  required: [name]
  properties: {name: {type: string}}
---
## system
You greet people.

## user
Hello {{ name }}!
""",
    "extract/contact": """---
profile: offline
artifacts:
  document: {required: true, media_type: "text/*"}
output:
  format: json_schema
  schema: {type: object, required: [name, email], additionalProperties: false, properties: {name: {type: string}, email: {type: string}}}
  repair_attempts: 1
---
## system
Extract the contact as JSON.

## user
{{ artifacts.document.text }}
""",
    "classify": """---
output:
  format: json
  repair_attempts: 2
---
Classify: {{ text }}
""",
    "claude/hello": """---
profile: claude
---
Say hello.
""",
}

PROFILES: dict[str, Any] = {
    "offline": {"provider": "fake", "model": "fake-1"},
    "tuned": {
        "provider": "fake",
        "model": "fake-2",
        "settings": {"max_tokens": 200, "temperature": 0.5},
    },
    "claude": {
        "provider": "anthropic",
        "model": "claude-sonnet-4-6",
        "api_key_env": "ANTHROPIC_API_KEY",
    },
    "keyless": {"provider": "anthropic", "model": "claude-sonnet-4-6"},
}

FILES: dict[str, bytes | str] = {
    "doc.txt": "Ada Lovelace <ada@example.com>",
    "other.txt": "Grace Hopper <grace@example.com>",
}


class RunnerFactory(Protocol):
    def __call__(
        self,
        client: Client | AsyncClient,
        *,
        prompts: Mapping[str, str] | None = None,
        profiles: Mapping[str, Any] | None = None,
        files: Mapping[str, bytes | str] | None = None,
        repairer: OutputRepairer | None = None,
        env: Mapping[str, str] | None = None,
        default_profile: str | None = None,
        observer: Observer | None = None,
    ) -> Runner: ...


@pytest.fixture
def make_runner() -> RunnerFactory:
    """A factory for Runners over the in-memory example project."""

    def build(
        client: Client | AsyncClient,
        *,
        prompts: Mapping[str, str] | None = None,
        profiles: Mapping[str, Any] | None = None,
        files: Mapping[str, bytes | str] | None = None,
        repairer: OutputRepairer | None = None,
        env: Mapping[str, str] | None = None,
        default_profile: str | None = None,
        observer: Observer | None = None,
    ) -> Runner:
        return Runner(
            prompts=MemoryPromptRepository(dict(PROMPTS if prompts is None else prompts)),
            profiles=MemoryProfileRepository(dict(PROFILES if profiles is None else profiles)),
            artifacts=MemoryArtifactReader(dict(FILES if files is None else files)),
            renderer=JinjaRenderer(),
            client=client,
            validator=SchemaValidator(),
            repairer=repairer,
            env={} if env is None else env,
            clock=FixedClock(),
            new_id=SequentialIds(),
            default_profile=default_profile,
            observer=observer,
        )

    return build


#: The key variable of the Ray tests' profiles. Set before the cluster starts, so its workers
#: inherit it: keys never travel through Ray.
RAY_KEY_ENV = "SCRIPTORIUM_RAY_TEST_KEY"


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    """One local Ray cluster for the whole session (2 CPUs), started only when a test asks."""
    import os

    ray = pytest.importorskip("ray")
    from scriptorium.batch.ray import start_local_cluster

    os.environ[RAY_KEY_ENV] = "ray-test-key-not-a-secret"
    # The executor's own start: loopback only, no dashboard.
    start_local_cluster(2, ignore_reinit_error=True)
    try:
        yield
    finally:
        ray.shutdown()
        os.environ.pop(RAY_KEY_ENV, None)
