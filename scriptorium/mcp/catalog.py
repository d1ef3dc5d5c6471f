"""What the server offers a client: each prompt file as an MCP prompt (prompts/list), and the
values an argument can take (completion/complete).

A prompt's arguments are its ``inputs`` properties (name, description, required) followed by one
``artifact.<name>`` argument per text artifact. Images and PDFs cannot travel as prompt arguments
(they are strings): the prompt's description names them instead.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from mcp import types

from scriptorium.mcp.arguments import (
    ARTIFACT_PREFIX,
    input_properties,
    media_artifacts,
    text_artifacts,
)

if TYPE_CHECKING:
    from scriptorium.promptdef.model import PromptDefinition

__all__ = [
    "MAX_COMPLETIONS",
    "completion_values",
    "prompt_arguments",
    "prompt_entry",
    "prompt_summary",
]

#: The most values one completion answer may hold (the protocol's limit).
MAX_COMPLETIONS = 100


def _description(definition: PromptDefinition) -> str | None:
    media = media_artifacts(definition)
    if not media:
        return definition.description
    named = ", ".join(
        f"{name} ({spec.media_type}{', required' if spec.required else ''})"
        for name, spec in media.items()
    )
    note = (
        f"Media artifacts, which cannot be given as prompt arguments: {named}. "
        "Run it with the run_prompt tool from a client that can send them, or with the "
        "scriptorium command line."
    )
    return note if not definition.description else f"{definition.description}\n\n{note}"


def _argument_description(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return None
    description = schema.get("description")
    return description if isinstance(description, str) else None


def prompt_arguments(definition: PromptDefinition) -> list[types.PromptArgument]:
    """The prompt's ``inputs`` properties, then its text artifacts as ``artifact.<name>``."""
    properties, required = input_properties(definition)
    arguments = [
        types.PromptArgument(
            name=name,
            description=_argument_description(schema),
            required=name in required,
        )
        for name, schema in properties.items()
    ]
    for name, spec in text_artifacts(definition).items():
        arguments.append(
            types.PromptArgument(
                name=f"{ARTIFACT_PREFIX}{name}",
                description=spec.description or f"the text of the artifact {name!r}",
                required=spec.required,
            )
        )
    return arguments


def prompt_entry(definition: PromptDefinition) -> types.Prompt:
    """``definition`` as prompts/list shows it."""
    return types.Prompt(
        name=definition.id,
        title=definition.title,
        description=_description(definition),
        arguments=prompt_arguments(definition),
    )


def prompt_summary(definition: PromptDefinition) -> dict[str, Any]:
    """What the ``list_prompts`` tool gives for a prompt: the prompts/list entry, as JSON, with
    the prompt's version and output format."""
    entry = prompt_entry(definition).model_dump(mode="json", by_alias=True, exclude_none=True)
    return {
        **entry,
        "version": definition.version,
        "output_format": definition.output.format,
    }


def _choices(schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return []
    enum = schema.get("enum")
    if isinstance(enum, list):
        return [v if isinstance(v, str) else json.dumps(v) for v in enum]
    if "const" in schema:
        value = schema["const"]
        return [value if isinstance(value, str) else json.dumps(value)]
    kind = schema.get("type")
    if kind == "boolean" or (isinstance(kind, list) and "boolean" in kind):
        return ["true", "false"]
    return []


def completion_values(definition: PromptDefinition, argument: str, prefix: str) -> types.Completion:
    """The values of ``argument`` that start with ``prefix``: its ``enum`` (or ``const``), or
    ``true``/``false`` for a boolean. Nothing for any other argument."""
    properties, _ = input_properties(definition)
    values = [v for v in _choices(properties.get(argument)) if v.startswith(prefix)]
    return types.Completion(
        values=values[:MAX_COMPLETIONS],
        total=len(values),
        has_more=len(values) > MAX_COMPLETIONS,
    )
