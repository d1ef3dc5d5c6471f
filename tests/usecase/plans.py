"""Plans of the in-memory example project, for tests that drive the run's pieces by hand."""

from __future__ import annotations

from scriptorium.llm.registry import default_registry
from scriptorium.prompt.jinja import JinjaRenderer
from scriptorium.testing import (
    MemoryArtifactReader,
    MemoryProfileRepository,
    MemoryPromptRepository,
)
from scriptorium.usecase.model import RunRequest
from scriptorium.usecase.plan import Plan, Planner
from scriptorium.validate.schema import SchemaValidator
from tests.conftest import FILES, PROFILES, PROMPTS

#: A text prompt, a json_schema prompt repaired once, and a json prompt repaired twice.
GREET = RunRequest(prompt_id="greet", inputs={"name": "Ada"})
CONTACT = RunRequest(prompt_id="extract/contact", artifacts={"document": "doc.txt"})
CLASSIFY = RunRequest(prompt_id="classify", profile="offline", inputs={"text": "hi"})

VALIDATOR = SchemaValidator()


def planner() -> Planner:
    """A Planner over the example project (no key in the environment)."""
    return Planner(
        prompts=MemoryPromptRepository(dict(PROMPTS)),
        profiles=MemoryProfileRepository(dict(PROFILES)),
        artifacts=MemoryArtifactReader(dict(FILES)),
        renderer=JinjaRenderer(),
        validator=VALIDATOR,
        providers=default_registry(),
        env={},
    )


def plan_of(request: RunRequest) -> Plan:
    """The plan of ``request``."""
    return planner().plan(request)
