"""``scriptorium check``: every problem in a project's prompts, templates, schemas and profiles.

The linter loads everything the way a run would (through the engine's repositories, renderer
helpers and validator) and adds what a run only finds later or never: variables a template uses
that ``inputs`` does not declare (and declared ones no template uses), ``artifacts.<name>``
references to undeclared artifacts, schemas that would fail at prepare time, profiles that do not
load or are named but missing, and anything that looks like a pasted key. A problem names the file
and, where it is known, the line; it never quotes a secret-looking value.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scriptorium.errors import ScriptoriumError
from scriptorium.profile.model import is_valid_profile_name, looks_like_secret
from scriptorium.promptdef.model import PromptDefinition, is_valid_prompt_id

if TYPE_CHECKING:
    from scriptorium._files import ConfinedDir
    from scriptorium.engine import Engine

__all__ = ["KINDS", "WARNINGS", "Problem", "check_project"]

PROMPT_SUFFIX = ".prompt.md"
PROFILE_SUFFIXES = (".yaml", ".yml")

#: Every ``Problem.kind``, with what it means.
KINDS: Mapping[str, str] = {
    "no_prompts_dir": "the project has no prompts/ directory",
    "prompt_name": "a .prompt.md file whose path is not a valid prompt id (it cannot be run)",
    "prompt_invalid": "the prompt does not load: front matter or body structure",
    "template_syntax": "a template does not compile",
    "undeclared_variable": "a template uses a variable that inputs does not declare",
    "unused_input": "inputs declares a variable no template uses",
    "undeclared_artifact": "a template reads artifacts.<name> that the prompt does not declare",
    "unused_artifact": "the prompt declares an artifact no template reads",
    "media_text": "a template reads .text of an image or PDF artifact, which has no text",
    "media_block": "a template places .block of an artifact that is not declared as media",
    "schema_invalid": "the output schema is missing, unreadable, unparsable or invalid",
    "schema_unused": "an output schema is given but the output format does not use it",
    "inputs_schema_invalid": "the inputs schema is not a valid JSON Schema",
    "profile_missing": "the prompt names a profile that does not exist",
    "link_outside": "a prompt or profile file (or a folder of prompts) is a symlink that leads "
    "outside its directory, or nowhere; it is never loaded",
    "profile_name": "a profile file whose name is not a valid profile name",
    "profile_invalid": "the profile does not load",
    "secret_in_profile": "a profile holds something that looks like a pasted API key",
    "secret_in_prompt": "a prompt file holds something that looks like a pasted API key",
    "cache_breakpoints": "more cache breakpoints than a request can carry (4): the first are dropped",
    "cache_after_input": "a cache breakpoint follows text that depends on the request's inputs",
    "cache_too_short": "the cached prefix is shorter than the model's minimum: nothing is cached",
}

#: Kinds that are warnings: printed, but ``check`` still succeeds.
WARNINGS = frozenset({"cache_breakpoints", "cache_after_input", "cache_too_short"})

# Mapping methods: a template calling one of these on ``artifacts`` reads artifacts by a name the
# linter cannot see, so unused/undeclared artifact checks are skipped for it.
_MAPPING_METHODS = frozenset({"items", "values", "keys", "get"})
# Schema keywords that declare properties some other way than a top-level ``properties``.
_INDIRECT = ("$ref", "allOf", "anyOf", "oneOf", "if", "dependentSchemas", "patternProperties")


@dataclass(frozen=True)
class Problem:
    """One finding: the file (relative to the project root), its kind (see :data:`KINDS`), a
    message for people, and the line when known."""

    file: str
    kind: str
    message: str
    line: int | None = None

    @property
    def severity(self) -> str:
        """``warning`` for the kinds in :data:`WARNINGS`, else ``error``."""
        return "warning" if self.kind in WARNINGS else "error"

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        label = f"{self.kind} (warning)" if self.kind in WARNINGS else self.kind
        return f"{where}: {label}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``scriptorium check --format json``); warnings say so."""
        data = asdict(self)
        if self.kind in WARNINGS:
            data["severity"] = "warning"
        return data


def check_project(engine: Engine) -> list[Problem]:
    """Every problem in the project under ``engine.root``, sorted by file (then line)."""
    project = _Project(engine)
    problems = [*project.check_profiles(), *project.check_prompts()]
    # Stable: within a file, problems keep the order they were found in.
    return sorted(problems, key=lambda p: p.file)


class _Project:
    def __init__(self, engine: Engine) -> None:
        from scriptorium._files import ConfinedDir

        self.engine = engine
        self.root = Path(engine.root)
        self.prompts_dir = Path(engine.prompts.root)
        self.profiles_dir = Path(engine.profiles.root)
        # Every file check reads goes through these: confined, regular files only, bounded.
        self.prompt_files = ConfinedDir(self.prompts_dir)
        self.profile_files = ConfinedDir(self.profiles_dir)
        self.profile_names = set(engine.list_profiles())

    def shown(self, path: Path) -> str:
        """``path`` relative to the project root, with forward slashes."""
        try:
            return Path(os.path.relpath(path, self.root)).as_posix()
        except ValueError:  # another drive
            return path.as_posix()

    # -- profiles --------------------------------------------------------------------------------

    def check_profiles(self) -> Iterator[Problem]:
        try:
            filenames = sorted(os.listdir(self.profiles_dir))
        except OSError:
            filenames = []
        for filename in filenames:
            for suffix in PROFILE_SUFFIXES:
                name = filename.removesuffix(suffix)
                if not filename.endswith(suffix):
                    continue
                if not is_valid_profile_name(name):
                    yield Problem(
                        self.shown(self.profiles_dir / filename),
                        "profile_name",
                        f"{name!r} is not a valid profile name (lowercase letters, digits, "
                        "'-' and '_'); the file cannot be used",
                    )
                else:
                    yield from self._link_problems(self.profile_files, filename, "profiles/")
        for name in sorted(self.profile_names):
            yield from self._check_profile(name)

    def _profile_file(self, name: str) -> Path:
        for suffix in PROFILE_SUFFIXES:
            path = self.profiles_dir / (name + suffix)
            if path.exists():
                return path
        return self.profiles_dir / (name + PROFILE_SUFFIXES[0])

    def _link_problems(
        self, directory: ConfinedDir, relative: str, where: str
    ) -> Iterator[Problem]:
        """A file or folder that is a link leading outside ``directory`` (or nowhere)."""
        from scriptorium._files import FileProblem

        path = Path(directory.path) / relative
        if not path.is_symlink():
            return
        try:
            directory.resolve(relative)
        except FileProblem as err:
            if err.kind in ("outside", "missing"):
                why = "leads outside" if err.kind == "outside" else "is a broken link under"
                yield Problem(
                    self.shown(path),
                    "link_outside",
                    f"this symlink {why} {where}; it is never loaded",
                )

    def _check_profile(self, name: str) -> Iterator[Problem]:
        path = self._profile_file(name)
        file = self.shown(path)
        secrets = list(_profile_secrets(self.profile_files, path.name, file))
        yield from secrets
        try:
            profile = self.engine.profiles.get(name)
        except ScriptoriumError as err:
            # A profile holding a secret is refused for that reason: said once, above.
            if not secrets:
                yield Problem(file, "profile_invalid", err.message)
            return
        providers = getattr(self.engine.client, "providers", None)
        if isinstance(providers, tuple) and profile.provider not in providers:
            yield Problem(
                file,
                "profile_invalid",
                f"unknown provider {profile.provider!r}; known: {', '.join(providers)}",
            )
        spec = self.engine.providers.find(profile.provider)
        if spec is None:
            return
        for message in spec.option_problems(profile.options, profile.source):
            yield Problem(file, "profile_invalid", message)
        if spec.needs_key and not profile.model:
            yield Problem(
                file, "profile_invalid", f"provider {profile.provider!r} needs a model; none set"
            )
        if "media" in profile.options:
            try:
                spec.media_limits(profile.endpoint, profile.options)
            except ScriptoriumError as err:
                yield Problem(file, "profile_invalid", err.message)

    # -- prompts ---------------------------------------------------------------------------------

    def check_prompts(self) -> Iterator[Problem]:
        if not self.prompts_dir.is_dir():
            yield Problem(self.shown(self.prompts_dir), "no_prompts_dir", KINDS["no_prompts_dir"])
            return
        for relative in self._prompt_tree():
            path = self.prompts_dir / relative
            if not relative.endswith(PROMPT_SUFFIX):  # a linked folder
                yield from self._link_problems(self.prompt_files, relative, "prompts/")
            elif not is_valid_prompt_id(relative.removesuffix(PROMPT_SUFFIX)):
                yield Problem(
                    self.shown(path),
                    "prompt_name",
                    "the path is not a valid prompt id (lowercase words joined by '/', at most "
                    "four deep); the prompt cannot be run",
                )
            else:
                yield from self._link_problems(self.prompt_files, relative, "prompts/")
        for prompt_id in self.engine.list_prompts():
            yield from self._check_prompt(prompt_id)

    def _prompt_tree(self) -> Iterator[str]:
        """Every ``.prompt.md`` file and every linked folder under prompts/, as relative paths,
        sorted; linked folders are not entered (the repository does not enter them either)."""
        found: list[str] = []
        for folder, dirnames, filenames in os.walk(self.prompts_dir):
            base = Path(folder).relative_to(self.prompts_dir)
            for dirname in dirnames:
                if os.path.islink(os.path.join(folder, dirname)):
                    found.append((base / dirname).as_posix())
            dirnames[:] = sorted(dirnames)
            found.extend((base / f).as_posix() for f in filenames if f.endswith(PROMPT_SUFFIX))
        yield from sorted(found)

    def _check_prompt(self, prompt_id: str) -> Iterator[Problem]:
        path = self.prompts_dir / (prompt_id + PROMPT_SUFFIX)
        file = self.shown(path)
        for line in _secret_lines(self.prompt_files, prompt_id + PROMPT_SUFFIX):
            yield Problem(
                file,
                "secret_in_prompt",
                "this line looks like a pasted API key; prompts are shared, keys belong in "
                "environment variables",
                line,
            )
        try:
            definition = self.engine.prompts.get(prompt_id)
        except ScriptoriumError as err:
            yield Problem(file, "prompt_invalid", err.message)
            return
        if definition.profile is not None and definition.profile not in self.profile_names:
            yield Problem(
                file,
                "profile_missing",
                f"names profile {definition.profile!r}, which is not under "
                f"{self.shown(self.profiles_dir)}/",
            )
        yield from self._check_schemas(file, definition)
        yield from self._check_templates(file, definition)
        yield from self._check_cache(file, definition)

    def _check_cache(self, file: str, definition: PromptDefinition) -> Iterator[Problem]:
        from scriptorium.lint_cache import cache_problems

        model = None
        if definition.profile is not None and definition.profile in self.profile_names:
            try:
                model = self.engine.profiles.get(definition.profile).model
            except ScriptoriumError:
                model = None
        for kind, message in cache_problems(definition, model):
            yield Problem(file, kind, message)

    def _check_schemas(self, file: str, definition: PromptDefinition) -> Iterator[Problem]:
        validator = self.engine.validator
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

    def _check_templates(self, file: str, definition: PromptDefinition) -> Iterator[Problem]:
        from scriptorium.prompt.jinja import (
            check_syntax,
            template_artifact_fields,
            template_artifacts,
            template_variables,
        )

        syntax = check_syntax(definition)
        for message in syntax:
            yield Problem(file, "template_syntax", message)
        if syntax:
            return  # the variable checks need templates that parse
        try:
            used_by = template_variables(definition)
            read = template_artifacts(definition)
            fields = template_artifact_fields(definition)
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
    from scriptorium.artifact.media import MEDIA_TYPES
    from scriptorium.artifact.model import is_textual

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


_KEEP_KEYS_AWAY = "keep keys in environment variables and name the variable in api_key_env"


def _read_text(directory: ConfinedDir, relative: str) -> str | None:
    """A file under ``directory`` read the one bounded way (None when it cannot be read: the
    repository reports why)."""
    from scriptorium._files import FileProblem

    try:
        data = directory.read(relative, max_bytes=_MAX_CHECKED_BYTES).data
    except FileProblem:
        return None
    return data.decode("utf-8", errors="replace")


#: The most ``check`` reads of one prompt or profile file (the repositories refuse larger ones).
_MAX_CHECKED_BYTES = 4 << 20


def _profile_secrets(directory: ConfinedDir, relative: str, file: str) -> Iterator[Problem]:
    """Secret-looking values of a profile by key path; by line when the YAML does not parse."""
    from scriptorium._loading import FormatProblem, load_yaml

    text = _read_text(directory, relative)
    try:
        data = None if text is None else load_yaml(text)
    except FormatProblem:
        data = None
    if isinstance(data, dict):
        for where in _secret_paths(data, ()):
            yield Problem(
                file, "secret_in_profile", f"{where} looks like a pasted API key; {_KEEP_KEYS_AWAY}"
            )
        return
    for line in _secret_lines(directory, relative):
        yield Problem(
            file,
            "secret_in_profile",
            f"this line looks like a pasted API key; {_KEEP_KEYS_AWAY}",
            line,
        )


def _secret_paths(value: Any, loc: tuple[int | str, ...]) -> Iterator[str]:
    """The key path of every string (or mapping key) that looks like a credential."""
    from scriptorium._loading import format_path

    if isinstance(value, str):
        if looks_like_secret(value):
            yield format_path(loc)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and looks_like_secret(key):
                yield f"a key under {format_path(loc) or 'the top level'}"
                continue
            yield from _secret_paths(item, (*loc, key if isinstance(key, str | int) else "?"))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _secret_paths(item, (*loc, index))


def _secret_lines(directory: ConfinedDir, relative: str) -> Iterator[int]:
    """Line numbers of a file holding something that looks like a key (the value is not kept)."""
    text = _read_text(directory, relative)
    if text is None:
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if looks_like_secret(line):
            yield number
