"""The tools: ``run_prompt``, ``list_prompts``, ``render_prompt`` and, when asked for, one
``run_<id>`` tool per prompt; and how a run's result becomes a tool result.

A run's output text is the result's content; for a ``json`` or ``json_schema`` prompt the validated
value is its ``structuredContent`` too (an object as it is; any other value as ``{"value": ...}``,
since clients of the 2025 protocol versions take only objects there). A run that fails, or whose
output stays invalid after repairs, is a result with ``isError: true`` holding the error's code and
message. Usage and cost are in the result's ``_meta``; no key, key variable or endpoint is.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp import types

from scriptorium.errors import InvalidRequestError, OutputInvalidError, ScriptoriumError
from scriptorium.mcp.arguments import ARTIFACT_PREFIX, input_properties, text_artifacts
from scriptorium.mcp.catalog import prompt_entry
from scriptorium.mcp.errors import error_data

if TYPE_CHECKING:
    from scriptorium.promptdef.model import PromptDefinition
    from scriptorium.usecase.model import RunResult

__all__ = [
    "LIST_TOOL",
    "PER_PROMPT_PREFIX",
    "RENDER_TOOL",
    "RUN_TOOL",
    "RunArguments",
    "error_result",
    "fixed_tools",
    "json_result",
    "output_schema",
    "prompt_tool",
    "read_run_arguments",
    "run_meta",
    "run_result",
    "structured_value",
    "tool_input_schema",
    "tool_name",
]

RUN_TOOL = "run_prompt"
LIST_TOOL = "list_prompts"
RENDER_TOOL = "render_prompt"
#: The prefix of the per-prompt tools (``run_extract_contact`` runs ``extract/contact``).
PER_PROMPT_PREFIX = "run_"

_OBJECT_OF_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}

#: Listing and rendering read the project and call no model.
_READS = types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
#: A run calls a model (it costs, and its answer varies); it changes nothing on the server.
_RUNS = types.ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True
)

_FIXED_TOOLS = (
    types.Tool(
        name=RUN_TOOL,
        title="Run a prompt",
        description=(
            "Run one of this server's prompts through scriptorium: its inputs are checked against "
            "the prompt's inputs schema, the model's output is validated (and repaired when the "
            "server allows it). Returns the output text, and for JSON prompts the validated value "
            "as structured content. list_prompts names the prompts and their inputs."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "the prompt id, e.g. extract/contact"},
                "inputs": {
                    "type": "object",
                    "description": "the prompt's inputs, as its inputs schema types them",
                },
                "artifacts": {
                    **_OBJECT_OF_STRINGS,
                    "description": "text artifacts by name, each value the text itself",
                },
                "profile": {
                    "type": "string",
                    "description": "the profile to run on (default: the server's, else the prompt's)",
                },
            },
            "required": ["prompt"],
            "additionalProperties": False,
        },
        annotations=_RUNS,
    ),
    types.Tool(
        name=LIST_TOOL,
        title="List prompts",
        description=(
            "The prompts this server offers, as prompts/list gives them: id, description and "
            "arguments (inputs, and text artifacts named artifact.<name>)."
        ),
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        annotations=_READS,
    ),
    types.Tool(
        name=RENDER_TOOL,
        title="Render a prompt",
        description=(
            "The messages of a prompt rendered with the given arguments, as prompts/get gives "
            "them, without calling any model. Arguments are strings: inputs are read as the "
            "prompt's inputs schema types them; artifact.<name> carries an artifact's text."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "the prompt id"},
                "arguments": {**_OBJECT_OF_STRINGS, "description": "the prompt's arguments"},
            },
            "required": ["prompt"],
            "additionalProperties": False,
        },
        annotations=_READS,
    ),
)


def fixed_tools() -> list[types.Tool]:
    """``run_prompt``, ``list_prompts`` and ``render_prompt``."""
    return list(_FIXED_TOOLS)


def tool_name(prompt_id: str) -> str:
    """The per-prompt tool of ``prompt_id``: ``run_`` and the id with ``/`` as ``_``."""
    return PER_PROMPT_PREFIX + prompt_id.replace("/", "_")


def _only_local_refs(document: Any) -> bool:
    """Whether every ``$ref`` in ``document`` points inside it (a client cannot follow one to the
    server's files)."""
    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                return False
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return True


def _is_object_schema(document: Any) -> bool:
    return isinstance(document, dict) and document.get("type") == "object"


def output_schema(document: Any) -> dict[str, Any] | None:
    """The tool output schema for a prompt whose loaded output schema is ``document``: the schema
    itself when its root is an object; ``{"value": <schema>}`` otherwise (as the value travels);
    none when it refers to other files."""
    if not isinstance(document, dict) or not _only_local_refs(document):
        return None
    if _is_object_schema(document):
        return dict(document)
    return {"type": "object", "properties": {"value": document}, "required": ["value"]}


def structured_value(value: Any) -> dict[str, Any]:
    """A validated value as ``structuredContent``: an object as it is, else ``{"value": ...}``."""
    return value if isinstance(value, dict) else {"value": value}


def tool_input_schema(definition: PromptDefinition) -> dict[str, Any]:
    """The prompt's ``inputs`` schema, plus one string property ``artifact.<name>`` per text
    artifact (required when the artifact is)."""
    schema: dict[str, Any] = copy.deepcopy(definition.inputs) if definition.inputs else {}
    schema.setdefault("type", "object")
    artifacts = text_artifacts(definition)
    if not artifacts:
        if "properties" not in schema:
            schema["properties"] = {}
        return schema
    properties = dict(schema.get("properties") or {})
    _, required = input_properties(definition)
    required_list = list(schema.get("required") or [])
    for name, spec in artifacts.items():
        key = f"{ARTIFACT_PREFIX}{name}"
        properties[key] = {
            "type": "string",
            "description": spec.description or f"the text of the artifact {name!r}",
        }
        if spec.required and key not in required:
            required_list.append(key)
    schema["properties"] = properties
    if required_list:
        schema["required"] = required_list
    return schema


def prompt_tool(definition: PromptDefinition, document: Any) -> types.Tool:
    """The ``run_<id>`` tool of ``definition`` whose loaded output schema is ``document``."""
    entry = prompt_entry(definition)
    return types.Tool(
        name=tool_name(definition.id),
        title=definition.title,
        description=entry.description or f"Run the prompt {definition.id}.",
        input_schema=tool_input_schema(definition),
        output_schema=output_schema(document),
        annotations=_RUNS,
    )


@dataclass(frozen=True)
class RunArguments:
    """``run_prompt``'s arguments, checked."""

    prompt: str
    inputs: dict[str, Any]
    artifacts: dict[str, Any]
    profile: str | None


def _object(arguments: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = arguments.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidRequestError(
            f"{name}: expected an object, got {type(value).__name__}", field=name
        )
    return value


def read_run_arguments(arguments: Mapping[str, Any]) -> RunArguments:
    """``run_prompt``'s arguments; ``InvalidRequestError`` naming the one that is wrong."""
    unknown = sorted(set(arguments) - {"prompt", "inputs", "artifacts", "profile"})
    if unknown:
        raise InvalidRequestError(
            f"run_prompt takes prompt, inputs, artifacts and profile; not {unknown[0]!r}",
            field=unknown[0],
        )
    prompt = arguments.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        raise InvalidRequestError("prompt: expected the prompt id, a string", field="prompt")
    profile = arguments.get("profile")
    if profile is not None and not isinstance(profile, str):
        raise InvalidRequestError("profile: expected a profile name, a string", field="profile")
    return RunArguments(
        prompt, _object(arguments, "inputs"), _object(arguments, "artifacts"), profile or None
    )


def run_meta(result: RunResult) -> dict[str, Any]:
    """What a tool result says about the run besides its output: ids, usage and cost."""
    return {
        "run_id": result.run_id,
        "prompt_id": result.prepared.prompt_id,
        "prompt_version": result.prepared.prompt_version,
        "profile": result.prepared.profile,
        "model": result.model,
        "usage": result.usage.model_dump(mode="json"),
        "cost_micro": result.usage.cost_micro,
        "duration_ms": result.duration_ms,
        "valid": result.validation.valid,
        "repaired": result.validation.repaired,
        "finish_reason": result.finish_reason,
    }


def error_result(
    err: ScriptoriumError, roots: tuple[str, ...], meta: dict[str, Any] | None = None
) -> types.CallToolResult:
    """A failure as a tool result: ``isError``, the code and message as text, and the error
    (code, message, safe fields) as ``{"error": ...}`` in the structured content and ``_meta``."""
    data = error_data(err, roots)
    return types.CallToolResult(
        content=[types.TextContent(text=f"{data['code']}: {data['message']}")],
        structured_content={"error": data},
        is_error=True,
        _meta={**(meta or {}), "error": data},
    )


def run_result(result: RunResult, roots: tuple[str, ...]) -> types.CallToolResult:
    """A finished run as a tool result (an invalid output is an error result holding the text)."""
    meta = run_meta(result)
    try:
        result.raise_for_validation()
    except OutputInvalidError as err:
        failed = error_result(err, roots, meta)
        failed.content.append(types.TextContent(text=result.output.text))
        return failed
    structured = None
    if result.validation.format in ("json", "json_schema"):
        structured = structured_value(result.validation.value)
    return types.CallToolResult(
        content=[types.TextContent(text=result.output.text)],
        structured_content=structured,
        _meta=meta,
    )


def json_result(value: dict[str, Any]) -> types.CallToolResult:
    """A tool result holding ``value``: as structured content, and as its JSON text."""
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(value, ensure_ascii=False))],
        structured_content=value,
    )
