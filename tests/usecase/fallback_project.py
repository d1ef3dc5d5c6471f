"""A small in-memory project whose profiles fall back to one another, for the fallback tests."""

from __future__ import annotations

from typing import Any

from scriptorium.llm.registry import default_registry
from scriptorium.prompt.jinja import JinjaRenderer
from scriptorium.testing import (
    MemoryArtifactReader,
    MemoryProfileRepository,
    MemoryPromptRepository,
)
from scriptorium.usecase.plan import Planner
from scriptorium.validate.schema import SchemaValidator

PROMPTS = {
    "hello": "---\nprofile: primary\n---\nSay hello.\n",
    "contact": """---
profile: picky
output:
  format: json_schema
  schema: {type: object, required: [name], properties: {name: {type: string}}}
  repair_attempts: 1
---
Who is it?
""",
}

PROFILES: dict[str, Any] = {
    "primary": {"provider": "fake", "model": "p-1", "fallback": ["backup", "third"]},
    "backup": {"provider": "fake", "model": "b-1"},
    "third": {"provider": "fake", "model": "t-1"},
    "picky": {
        "provider": "fake",
        "model": "k-1",
        "fallback": ["backup"],
        "fallback_on": ["invalid_output", "overloaded"],
    },
    "keyed": {"provider": "anthropic", "model": "claude-x", "api_key_env": "UNSET_KEY_VAR"},
    "lonely": {"provider": "fake", "model": "l-1"},
}

VALIDATOR = SchemaValidator()


def planner(profiles: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> Planner:
    """A Planner over the project (``profiles`` replacing the default ones)."""
    return Planner(
        prompts=MemoryPromptRepository(dict(PROMPTS)),
        profiles=MemoryProfileRepository(dict(PROFILES if profiles is None else profiles)),
        artifacts=MemoryArtifactReader({}),
        renderer=JinjaRenderer(),
        validator=VALIDATOR,
        providers=default_registry(),
        env={} if env is None else env,
    )
