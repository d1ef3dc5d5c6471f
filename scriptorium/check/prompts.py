"""``check`` over the prompts: file names and links, pasted keys, definitions that do not load,
profiles named but missing, schemas, templates (syntax, variables against ``inputs``, artifacts
against ``artifacts``, media fields) and caching."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from scriptorium.artifact.media import MEDIA_TYPES
from scriptorium.artifact.model import is_textual
from scriptorium.check.cache import cache_problems
from scriptorium.check.files import ProjectFiles
from scriptorium.check.problems import KINDS, Problem
from scriptorium.check.secrets import secret_lines
from scriptorium.check.view import ProjectView
from scriptorium.errors import ScriptoriumError
from scriptorium.promptdef.model import PromptDefinition, is_valid_prompt_id

__all__ = ["PROMPT_SUFFIX", "prompt_problems"]

PROMPT_SUFFIX = ".prompt.md"

# Mapping methods: a template calling one of these on ``artifacts`` reads artifacts by a name the
# linter cannot see, so unused/undeclared artifact checks are skipped for it.
_MAPPING_METHODS = frozenset({"items", "values", "keys", "get"})
# Schema keywords that declare properties some other way than a top-level ``properties``.
_INDIRECT = ("$ref", "allOf", "anyOf", "oneOf", "if", "dependentSchemas", "patternProperties")


def prompt_problems(
    view: ProjectView, files: ProjectFiles, profile_names: set[str]
) -> Iterator[Problem]:
    """Every problem of the prompt files, then of each prompt the repository lists."""
    prompts_dir = files.prompts_dir
    if not prompts_dir.is_dir():
        yield Problem(files.shown(prompts_dir), "no_prompts_dir", KINDS["no_prompts_dir"])
        return
    for relative in _prompt_tree(prompts_dir):
        path = prompts_dir / relative
        if not relative.endswith(PROMPT_SUFFIX):  # a linked folder
            yield from files.link_problems(files.prompt_files, relative, "prompts/")
        elif not is_valid_prompt_id(relative.removesuffix(PROMPT_SUFFIX)):
            yield Problem(
                files.shown(path),
                "prompt_name",
                "the path is not a valid prompt id (lowercase words joined by '/', at most "
                "four deep); the prompt cannot be run",
            )
        else:
            yield from files.link_problems(files.prompt_files, relative, "prompts/")
    for prompt_id in view.prompts.list():
        yield from _check_prompt(view, files, profile_names, prompt_id)


def _prompt_tree(prompts_dir: Path) -> Iterator[str]:
    """Every ``.prompt.md`` file and every linked folder under prompts/, as relative paths,
    sorted; linked folders are not entered (the repository does not enter them either)."""
    found: list[str] = []
    for folder, dirnames, filenames in os.walk(prompts_dir):
        base = Path(folder).relative_to(prompts_dir)
        for dirname in dirnames:
            if os.path.islink(os.path.join(folder, dirname)):
                found.append((base / dirname).as_posix())
        dirnames[:] = sorted(dirnames)
        found.extend((base / f).as_posix() for f in filenames if f.endswith(PROMPT_SUFFIX))
    yield from sorted(found)


def _check_prompt(
    view: ProjectView, files: ProjectFiles, profile_names: set[str], prompt_id: str
) -> Iterator[Problem]:
    path = files.prompts_dir / (prompt_id + PROMPT_SUFFIX)
    file = files.shown(path)
    for line in secret_lines(files.prompt_files, prompt_id + PROMPT_SUFFIX):
        yield Problem(
            file,
            "secret_in_prompt",
            "this line looks like a pasted API key; prompts are shared, keys belong in "
            "environment variables",
            line,
        )
    try:
        definition = view.prompts.get(prompt_id)
    except ScriptoriumError as err:
        yield Problem(file, "prompt_invalid", err.message)
        return
    if definition.profile is not None and definition.profile not in profile_names:
        yield Problem(
            file,
            "profile_missing",
            f"names profile {definition.profile!r}, which is not under "
            f"{files.shown(files.profiles_dir)}/",
        )
    yield from _check_schemas(view, file, definition)
    yield from _check_templates(view, file, definition)
    yield from _check_cache(view, profile_names, file, definition)
    yield from _check_enforcement(view, profile_names, file, definition)


def _check_enforcement(
    view: ProjectView, profile_names: set[str], file: str, definition: PromptDefinition
) -> Iterator[Problem]:
    """A ``json_schema`` output whose profile's server may not hold the model to the schema (the
    provider's table says so: its spec's ``schema_warning``)."""
    output = definition.output
    if output.format != "json_schema" or output.strategy == "prompt":
        return
    if definition.profile is None or definition.profile not in profile_names:
        return
    try:
        profile = view.profiles.get(definition.profile)
    except ScriptoriumError:
        return  # reported with the profile
    spec = view.providers.find(profile.provider)
    warning = None if spec is None else spec.schema_warning(profile.endpoint, profile.options)
    if warning is not None:
        yield Problem(file, "schema_not_enforced", f"profile {profile.name!r}: {warning}")


def _check_cache(
    view: ProjectView, profile_names: set[str], file: str, definition: PromptDefinition
) -> Iterator[Problem]:
    model = None
    spec = None
    if definition.profile is not None and definition.profile in profile_names:
        try:
            profile = view.profiles.get(definition.profile)
        except ScriptoriumError:
            profile = None
        if profile is not None:
            model = profile.model
            spec = view.providers.find(profile.provider)
    problems = (
        cache_problems(definition, model)
        if spec is None
        else cache_problems(definition, model, spec.minimum_cacheable_tokens)
    )
    for kind, message in problems:
        yield Problem(file, kind, message)


def _check_schemas(view: ProjectView, file: str, definition: PromptDefinition) -> Iterator[Problem]:
    validator = view.validator
    output = definition.output
    if output.format == "json_schema":
        if output.schema_ is None:
            yield Problem(file, "schema_invalid", "output format json_schema needs a schema")
        else:
            try:
                validator.load_schema(output.schema_, relative_to=definition.source)
            except ScriptoriumError as err:
                yield Problem(file, "schema_invalid", err.message)
    elif output.schema_ is not None:
        yield Problem(
            file,
            "schema_unused",
            f"output.schema is set but output.format is {output.format}; use json_schema "
            "to have outputs checked against it",
        )
    if definition.inputs is not None:
        try:
            validator.load_schema(definition.inputs, relative_to=definition.source)
        except ScriptoriumError as err:
            yield Problem(file, "inputs_schema_invalid", err.message)


def _check_templates(
    view: ProjectView, file: str, definition: PromptDefinition
) -> Iterator[Problem]:
    templates = view.templates
    syntax = templates.syntax(definition)
    for message in syntax:
        yield Problem(file, "template_syntax", message)
    if syntax:
        return  # the variable checks need templates that parse
    try:
        used_by = templates.variables(definition)
        read = templates.artifacts(definition)
        fields = templates.artifact_fields(definition)
    except ScriptoriumError as err:
        yield Problem(file, "template_syntax", err.message)
        return
    yield from _check_variables(file, definition, used_by)
    yield from _check_media_fields(file, definition, fields)
    if read & _MAPPING_METHODS:
        return
    declared = set(definition.artifacts)
    for name in sorted(read - declared):
        yield Problem(
            file,
            "undeclared_artifact",
            f"a template reads artifacts.{name}, but artifacts declares no {name!r}",
        )
    # A media artifact no template places is still sent (first in the first user message).
    for name in sorted(declared - read - _media_artifacts(definition)):
        yield Problem(
            file, "unused_artifact", f"artifact {name!r} is declared but no template reads it"
        )


def _declared_kind(media_type: str | None) -> str:
    """``"media"`` when a declared media type (or pattern) admits only images and PDFs, ``"text"``
    when it admits only textual types, else ``"unknown"`` (``image/*`` counts as media: the
    other image types have no text either)."""
    if media_type is None:
        return "unknown"
    declared = media_type.split(";", 1)[0].strip().lower()
    if "*" not in declared:
        return "media" if declared in MEDIA_TYPES else "text" if is_textual(declared) else "unknown"
    if declared.startswith("text/"):
        return "text"
    return "media" if declared == "image/*" else "unknown"


def _media_artifacts(definition: PromptDefinition) -> set[str]:
    return {
        name
        for name, spec in definition.artifacts.items()
        if _declared_kind(spec.media_type) == "media"
    }


def _check_media_fields(
    file: str, definition: PromptDefinition, fields: set[tuple[str, str]]
) -> Iterator[Problem]:
    for name, field in sorted(fields):
        spec = definition.artifacts.get(name)
        if spec is None:
            continue  # reported as undeclared_artifact
        kind = _declared_kind(spec.media_type)
        if field == "text" and kind == "media":
            yield Problem(
                file,
                "media_text",
                f"a template reads artifacts.{name}.text, but {name!r} is {spec.media_type}, "
                f"which has no text: place it with {{{{ artifacts.{name}.block }}}}",
            )
        elif field == "block" and kind == "text":
            yield Problem(
                file,
                "media_block",
                f"a template places artifacts.{name}.block, but {name!r} is {spec.media_type}: "
                f"only images and PDFs have a block; read artifacts.{name}.text",
            )


def _declared_inputs(inputs: dict[str, Any] | None) -> set[str] | None:
    """The variable names ``inputs`` declares, or None when they cannot be known statically."""
    if inputs is None:
        return set()
    properties = inputs.get("properties")
    if any(key in inputs for key in _INDIRECT):
        return None
    return set(properties) if isinstance(properties, dict) else set()


def _check_variables(
    file: str, definition: PromptDefinition, used_by: Mapping[str, set[str]]
) -> Iterator[Problem]:
    declared = _declared_inputs(definition.inputs)
    if declared is None:
        return
    reported: set[str] = set()
    for label, names in used_by.items():
        for name in sorted(names - declared - reported):
            reported.add(name)
            why = "inputs does not declare it" if definition.inputs else "the prompt has no inputs"
            yield Problem(
                file,
                "undeclared_variable",
                f"template {label} uses {name!r}, but {why} (add it to inputs.properties)",
            )
    used = set().union(*used_by.values()) if used_by else set()
    for name in sorted(declared - used):
        yield Problem(file, "unused_input", f"inputs declares {name!r} but no template uses it")
