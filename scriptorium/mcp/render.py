"""A prepared run as prompts/get answers it: MCP prompt messages.

MCP prompts have no system role, so the system text (with the output instructions ``prepare``
adds to it) opens the first user message, between ``<system>`` and ``</system>`` lines; when the
conversation does not open with a user message, a user message of its own holds it. The system text
is also in the result's ``_meta`` (``system``), with the hashes of what was rendered, for a client
that has a place of its own for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp import types

from scriptorium.prompt.model import TextPart

if TYPE_CHECKING:
    from scriptorium.prompt.model import Content
    from scriptorium.promptdef.model import PromptDefinition
    from scriptorium.usecase.model import PreparedRun

__all__ = [
    "SYSTEM_CLOSE",
    "SYSTEM_OPEN",
    "prepared_meta",
    "prompt_messages",
    "prompt_result",
    "system_opening",
]

#: The lines around the system text at the head of the first user message.
SYSTEM_OPEN = "<system>"
SYSTEM_CLOSE = "</system>"


def system_opening(system: str) -> str:
    """The system text, marked as such."""
    return f"{SYSTEM_OPEN}\n{system}\n{SYSTEM_CLOSE}"


def _blocks(content: Content) -> list[types.TextContent]:
    if isinstance(content, str):
        return [types.TextContent(text=content)]
    blocks = []
    for part in content:
        if isinstance(part, TextPart):
            blocks.append(types.TextContent(text=part.text))
        else:
            # Media never comes by a prompt argument; a template that places one anyway is shown
            # what it placed, not the bytes.
            blocks.append(
                types.TextContent(
                    text=f"[{part.media_type} artifact {part.name}, {part.size} bytes, {part.sha256}]"
                )
            )
    return blocks


def prompt_messages(prepared: PreparedRun) -> list[types.PromptMessage]:
    """The prepared messages as MCP prompt messages, the system text opening the first."""
    messages = [
        types.PromptMessage(role=message.role, content=block)
        for message in prepared.messages
        for block in _blocks(message.content)
    ]
    if not prepared.system:
        return messages
    opening = system_opening(prepared.system)
    first = messages[0] if messages else None
    if first is not None and first.role == "user" and isinstance(first.content, types.TextContent):
        messages[0] = types.PromptMessage(
            role="user", content=types.TextContent(text=f"{opening}\n\n{first.content.text}")
        )
    else:
        messages.insert(
            0, types.PromptMessage(role="user", content=types.TextContent(text=opening))
        )
    return messages


def prepared_meta(prepared: PreparedRun) -> dict[str, Any]:
    """What was rendered, for a client that keeps it: the system text, ids and hashes (never the
    target: no endpoint, no key variable)."""
    return {
        "system": prepared.system,
        "prompt_id": prepared.prompt_id,
        "prompt_version": prepared.prompt_version,
        "profile": prepared.profile,
        "definition_hash": prepared.definition_hash,
        "inputs_hash": prepared.inputs_hash,
        "rendered_prompt_hash": prepared.rendered_prompt_hash,
        "artifacts": [
            {"name": a.name, "media_type": a.media_type, "size": a.size, "sha256": a.sha256}
            for a in prepared.artifacts
        ],
    }


def prompt_result(definition: PromptDefinition, prepared: PreparedRun) -> types.GetPromptResult:
    """prompts/get's answer for ``prepared``."""
    return types.GetPromptResult(
        description=definition.description,
        messages=prompt_messages(prepared),
        _meta=prepared_meta(prepared),
    )
