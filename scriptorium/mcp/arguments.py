"""What an MCP client sends, as a ``RunRequest``: prompt arguments (all strings) read as the
prompt's ``inputs`` schema types them, and text artifacts given by value.

No SDK here: the rules are plain functions over the prompt definition, shared by prompts/get, the
``render_prompt`` tool and the per-prompt ``run_<id>`` tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scriptorium.artifact.model import is_textual
from scriptorium.errors import InvalidRequestError
from scriptorium.promptdef.arguments import typed_inputs

if TYPE_CHECKING:
    from scriptorium.artifact.model import ArtifactContent
    from scriptorium.promptdef.model import ArtifactSpec, PromptDefinition
    from scriptorium.usecase.model import RunRequest

__all__ = [
    "ARTIFACT_PREFIX",
    "artifact_content",
    "input_properties",
    "is_text_artifact",
    "media_artifacts",
    "request_from_arguments",
    "run_request",
    "split_arguments",
    "text_artifacts",
]

#: Prompt arguments and per-prompt tool properties that carry an artifact's text are named
#: ``artifact.<name>``: a dot cannot appear in an input name a template can use.
ARTIFACT_PREFIX = "artifact."


def is_text_artifact(spec: ArtifactSpec) -> bool:
    """Whether an artifact can travel as a string: it declares no media type, or a textual one."""
    return spec.media_type is None or is_textual(spec.media_type)


def text_artifacts(definition: PromptDefinition) -> dict[str, ArtifactSpec]:
    """The prompt's artifacts that a client may give as text, in declaration order."""
    return {n: s for n, s in definition.artifacts.items() if is_text_artifact(s)}


def media_artifacts(definition: PromptDefinition) -> dict[str, ArtifactSpec]:
    """The prompt's image or PDF artifacts: no MCP prompt argument can carry them."""
    return {n: s for n, s in definition.artifacts.items() if not is_text_artifact(s)}


def input_properties(definition: PromptDefinition) -> tuple[dict[str, Any], set[str]]:
    """The ``inputs`` schema's properties and its required names (empty when it declares none)."""
    schema = definition.inputs or {}
    properties = schema.get("properties")
    required = schema.get("required")
    props = dict(properties) if isinstance(properties, Mapping) else {}
    names = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    return props, names


def artifact_content(definition: PromptDefinition, name: str, text: str) -> ArtifactContent:
    """The text of artifact ``name``, by value. A declared concrete textual type is kept (a JSON
    artifact stays ``application/json``); otherwise the text is plain text."""
    from scriptorium.artifact.model import ArtifactContent

    spec = definition.artifacts.get(name)
    declared = None if spec is None else spec.media_type
    if declared is not None and "*" not in declared and is_textual(declared):
        return ArtifactContent(text, media_type=declared)
    return ArtifactContent(text)


def split_arguments(
    definition: PromptDefinition, arguments: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``arguments`` as (inputs, artifact texts): a key ``artifact.<name>`` is an artifact."""
    inputs: dict[str, Any] = {}
    artifacts: dict[str, Any] = {}
    for key, value in arguments.items():
        if key.startswith(ARTIFACT_PREFIX):
            artifacts[key[len(ARTIFACT_PREFIX) :]] = value
        else:
            inputs[key] = value
    return inputs, artifacts


def _artifact_texts(
    definition: PromptDefinition, texts: Mapping[str, Any]
) -> dict[str, str | ArtifactContent]:
    found: dict[str, str | ArtifactContent] = {}
    for name, text in texts.items():
        if not isinstance(text, str):
            raise InvalidRequestError(
                f"artifact {name}: expected its text as a string, got {type(text).__name__}",
                prompt_id=definition.id,
                field="artifacts",
            )
        found[name] = artifact_content(definition, name, text)
    return found


def run_request(
    definition: PromptDefinition,
    *,
    inputs: Mapping[str, Any],
    artifacts: Mapping[str, Any],
    profile: str | None,
    repair: bool,
) -> RunRequest:
    """The request for ``definition`` with ``inputs`` as given and ``artifacts`` as text.

    ``repair`` (the server has a repairer) means at least one repair attempt when the prompt sets
    none, as ``--repair`` does on the command line.
    """
    from scriptorium.errors import translate
    from scriptorium.usecase.model import Overrides, RunRequest

    overrides = Overrides()
    if repair and definition.output.repair_attempts < 1:
        overrides = Overrides(repair_attempts=1)
    with translate(InvalidRequestError, "invalid request"):
        return RunRequest(
            prompt_id=definition.id,
            profile=profile,
            inputs=dict(inputs),
            artifacts=_artifact_texts(definition, artifacts),
            overrides=overrides,
        )


def request_from_arguments(
    definition: PromptDefinition,
    arguments: Mapping[str, str],
    *,
    profile: str | None,
    repair: bool = False,
) -> RunRequest:
    """prompts/get's string arguments as a request: each input read as the ``inputs`` schema
    types it (as ``-i key=value`` is), each ``artifact.<name>`` the artifact's text."""
    raw_inputs, texts = split_arguments(definition, arguments)
    inputs = typed_inputs(((k, str(v)) for k, v in raw_inputs.items()), definition.inputs)
    return run_request(definition, inputs=inputs, artifacts=texts, profile=profile, repair=repair)
