"""``check`` over the tests files (``prompts/<id>.tests.yaml``): files that do not load, whose
prompt does not exist or whose name is no prompt id, pasted keys, profiles (the file's, each
judge's) that do not exist, inputs and artifacts the prompt does not declare (or that its inputs
schema refuses, or files that are not there), and expectations on the parsed value that the
prompt's output can never hold."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scriptorium._files import ConfinedDir, FileProblem
from scriptorium._suggest import did_you_mean
from scriptorium.check.files import ProjectFiles
from scriptorium.check.pointers import value_paths, why_cannot_hold
from scriptorium.check.problems import Problem
from scriptorium.check.secrets import secret_lines
from scriptorium.check.view import ProjectView
from scriptorium.errors import PromptLoadError, ScriptoriumError
from scriptorium.evals.files import artifact_path
from scriptorium.evals.model import SUFFIX, Case, TestsFile
from scriptorium.evals.parse import tests_file_problems
from scriptorium.promptdef.model import PromptDefinition, is_valid_prompt_id
from scriptorium.usecase.prepare import validate_inputs

__all__ = ["tests_problems"]


def tests_problems(
    view: ProjectView, files: ProjectFiles, profile_names: set[str]
) -> Iterator[Problem]:
    """Every problem of the project's tests files (none when the view has no tests)."""
    tests = view.tests
    if tests is None or not files.prompts_dir.is_dir():
        return
    for relative in _tests_tree(files.prompts_dir):
        if not is_valid_prompt_id(relative.removesuffix(SUFFIX)):
            yield Problem(
                files.shown(files.prompts_dir / relative),
                "tests_orphan",
                "the path is not a valid prompt id, so these cases belong to no prompt and "
                "never run",
            )
        else:
            yield from files.link_problems(files.prompt_files, relative, "prompts/")
    project = ConfinedDir(view.root)
    for prompt_id in tests.list():
        file = files.shown(files.prompts_dir / (prompt_id + SUFFIX))
        for line in secret_lines(files.prompt_files, prompt_id + SUFFIX):
            yield Problem(
                file,
                "secret_in_tests",
                "this line looks like a pasted API key; tests files are shared, keys belong in "
                "environment variables",
                line,
            )
        try:
            loaded = tests.get(prompt_id)
        except PromptLoadError as err:
            for message in tests_file_problems(err):
                yield Problem(file, "tests_invalid", message)
            continue
        except ScriptoriumError as err:
            yield Problem(file, "tests_invalid", err.message)
            continue
        try:
            definition = view.prompts.get(prompt_id)
        except PromptLoadError as err:
            if err.reason == "not_found":
                yield Problem(
                    file,
                    "tests_orphan",
                    f"there is no prompt {prompt_id!r} (prompts/{prompt_id}.prompt.md) for "
                    "these cases",
                )
            continue  # a prompt that does not load is reported as prompt_invalid
        except ScriptoriumError:
            continue
        yield from _check_file(view, project, file, loaded, definition, profile_names)


def _tests_tree(prompts_dir: Path) -> list[str]:
    found: list[str] = []
    for folder, dirnames, filenames in os.walk(prompts_dir):
        base = Path(folder).relative_to(prompts_dir)
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(folder, d)))
        found.extend((base / f).as_posix() for f in filenames if f.endswith(SUFFIX))
    return sorted(found)


def _output_schema(view: ProjectView, definition: PromptDefinition) -> Any:
    """The output schema document, or True when there is none to walk (or it does not load:
    ``schema_invalid`` says so)."""
    output = definition.output
    if output.format != "json_schema" or output.schema_ is None:
        return True
    try:
        return view.validator.load_schema(output.schema_, relative_to=definition.source).document
    except ScriptoriumError:
        return True


def _check_file(
    view: ProjectView,
    project: ConfinedDir,
    file: str,
    tests: TestsFile,
    definition: PromptDefinition,
    profile_names: set[str],
) -> Iterator[Problem]:
    if tests.profile is not None and tests.profile not in profile_names:
        yield Problem(
            file,
            "tests_profile",
            f"names profile {tests.profile!r}, which is not in profiles/"
            + did_you_mean(tests.profile, profile_names),
        )
    schema = _output_schema(view, definition)
    for index, case in enumerate(tests.cases):
        where = f"cases[{index}] ({case.name!r})"
        yield from _check_inputs(view, file, where, case, definition)
        yield from _check_artifacts(project, file, where, tests, case, definition)
        yield from _check_value(file, where, case, definition, schema)
        judge = case.expect.judge
        if judge is not None and judge.profile not in profile_names:
            yield Problem(
                file,
                "tests_judge",
                f"{where}: the judge names profile {judge.profile!r}, which is not in profiles/"
                + did_you_mean(judge.profile, profile_names),
            )


def _check_inputs(
    view: ProjectView, file: str, where: str, case: Case, definition: PromptDefinition
) -> Iterator[Problem]:
    if definition.inputs is None:
        for name in sorted(case.inputs):
            yield Problem(
                file,
                "tests_input",
                f"{where}: input {name!r} is given, but prompt {definition.id!r} declares no "
                "inputs",
            )
        return
    try:
        validate_inputs(definition, dict(case.inputs), view.validator)
    except ScriptoriumError as err:
        yield Problem(file, "tests_input", f"{where}: {err.message}")


def _check_artifacts(
    project: ConfinedDir,
    file: str,
    where: str,
    tests: TestsFile,
    case: Case,
    definition: PromptDefinition,
) -> Iterator[Problem]:
    declared = definition.artifacts
    for name in sorted(case.artifacts):
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            yield Problem(
                file,
                "tests_artifact",
                f"{where}: artifact {name!r} is not declared by prompt {definition.id!r} "
                f"(declared: {known})",
            )
            continue
        ref = case.artifacts[name]
        if not isinstance(ref, str):
            continue
        try:
            project.resolve(artifact_path(tests, ref))
        except (ValueError, FileProblem) as err:
            yield Problem(file, "tests_artifact", f"{where}: artifact {name!r}: {err}")
    for name, spec in sorted(declared.items()):
        if spec.required and name not in case.artifacts:
            yield Problem(
                file,
                "tests_artifact",
                f"{where}: the prompt requires artifact {name!r}; the case gives none",
            )


def _check_value(
    file: str, where: str, case: Case, definition: PromptDefinition, schema: Any
) -> Iterator[Problem]:
    expect = case.expect
    if not expect.checks_value():
        return
    if definition.output.format == "text":
        yield Problem(
            file,
            "tests_pointer",
            f"{where}: value and pointer read the parsed output, but prompt {definition.id!r} "
            "has a text output (there is no parsed value)",
        )
        return
    checks: list[tuple[str, list[str], Any]] = []
    for pointer, wanted in (expect.pointer or {}).items():
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
        checks.append((f"pointer {pointer or '(whole value)'}", tokens, wanted))
    if expect.expects_value:
        for tokens, leaf in value_paths(expect.value):
            checks.append((f"value at /{'/'.join(tokens)}", tokens, leaf))
    for label, tokens, wanted in checks:
        why = why_cannot_hold(schema, tokens, wanted)
        if why is not None:
            yield Problem(
                file, "tests_pointer", f"{where}: {label} can never match the output: {why}"
            )
