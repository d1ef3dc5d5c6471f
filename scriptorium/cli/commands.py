"""The subcommands ``run``, ``prepare``, ``list``, ``check`` and ``verify``.

Each takes the parsed arguments and a :class:`Reporter` and returns the exit status; failures are
raised as sentinels and reported by ``main``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scriptorium.cli.output import (
    Reporter,
    format_prepared,
    format_summary,
    format_token_count,
)
from scriptorium.errors import (
    InvalidRequestError,
    OutputInvalidError,
    ProfileRequiredError,
    ScriptoriumError,
    translate,
)
from scriptorium.promptdef.arguments import typed_inputs

if TYPE_CHECKING:
    from scriptorium.artifact.model import ArtifactContent
    from scriptorium.engine import Engine
    from scriptorium.promptdef.model import PromptDefinition
    from scriptorium.usecase.model import RunRequest, RunResult

__all__ = [
    "artifact_base",
    "artifact_ref",
    "build_request",
    "cmd_check",
    "cmd_list",
    "cmd_prepare",
    "cmd_run",
    "cmd_verify",
    "make_engine",
    "output_text",
    "read_inputs",
]


def artifact_base(args: argparse.Namespace) -> Path:
    """Where artifact paths resolve: ``--artifact-root``, else the project root (``--root``), the
    same rule as ``Engine(root, artifact_root=...)``."""
    return Path(getattr(args, "artifact_root", None) or args.root)


def make_engine(args: argparse.Namespace) -> Engine:
    """The Engine over ``--root``; artifacts resolve under :func:`artifact_base`."""
    from scriptorium.engine import Engine
    from scriptorium.observe import observer_from_env

    artifact_root = getattr(args, "artifact_root", None) or None
    return Engine(
        args.root,
        repair=getattr(args, "repair", False),
        artifact_root=artifact_root,
        observer=observer_from_env(),
    )


#: The most ``--inputs`` may hold (a file or stdin).
MAX_INPUTS_BYTES = 64 * 2**20


def read_inputs(source: str | None) -> dict[str, Any]:
    """The JSON object of ``--inputs FILE`` (``-`` = stdin); ``InvalidRequestError`` otherwise.
    A file is read the bounded way (a regular file only, at most :data:`MAX_INPUTS_BYTES`)."""
    from scriptorium._files import FileProblem, read_named_file

    if source is None:
        return {}
    where = "stdin" if source == "-" else source
    try:
        if source == "-":
            text = sys.stdin.read(MAX_INPUTS_BYTES + 1)
            if len(text) > MAX_INPUTS_BYTES:
                raise FileProblem("too_large", f"stdin holds more than {MAX_INPUTS_BYTES} bytes")
        else:
            data = read_named_file(source, max_bytes=MAX_INPUTS_BYTES, label=source)
            text = data.decode("utf-8")
    except FileProblem as err:
        raise InvalidRequestError(f"--inputs: {err}", field="inputs") from err
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidRequestError(
            f"--inputs: cannot read {where}: {err.__class__.__name__}", field="inputs"
        ) from err
    try:
        value = json.loads(text)
    except ValueError as err:
        raise InvalidRequestError(f"--inputs: {where} is not JSON: {err}", field="inputs") from err
    if not isinstance(value, dict):
        raise InvalidRequestError(f"--inputs: {where} must hold a JSON object", field="inputs")
    return value


def artifact_ref(path: str, base: Path) -> str:
    """An artifact path as typed on the command line, as a reference under ``base`` (the artifact
    root): an absolute path inside it becomes relative (shells complete absolute paths); anything
    else is left for the reader to accept or refuse, with a hint."""
    candidate = Path(path)
    if candidate.is_absolute():
        try:
            return candidate.resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            return path
    return path


def build_request(
    args: argparse.Namespace,
    *,
    inputs: dict[str, Any] | None = None,
    artifacts: Mapping[str, str | ArtifactContent] | None = None,
    definition: PromptDefinition | None = None,
) -> RunRequest:
    """The ``RunRequest`` the options describe (``inputs``/``artifacts`` are merged under them).

    ``definition`` (the prompt's) types the ``-i`` values by its ``inputs`` schema, and lets
    ``--repair`` mean at least one attempt when the prompt sets none.
    """
    from scriptorium.usecase.model import Overrides, RunRequest

    base = artifact_base(args)
    schema = None if definition is None else definition.inputs
    merged_inputs = {
        **(inputs or {}),
        **read_inputs(args.inputs_file),
        **typed_inputs(args.input_pairs, schema),
    }
    repair_attempts = args.repair_attempts
    wants_repair = getattr(args, "repair", False)
    if wants_repair and repair_attempts is None and definition is not None:
        repair_attempts = max(1, definition.output.repair_attempts)
    merged_artifacts: dict[str, str | ArtifactContent] = {
        **(artifacts or {}),
        **{name: artifact_ref(path, base) for name, path in args.artifact_pairs},
    }
    with translate(InvalidRequestError, "invalid option"):
        overrides = Overrides(
            model=args.model,
            max_tokens=args.max_tokens,
            temperature=args.temperature,
            reasoning=getattr(args, "reasoning", None),
            reasoning_budget_tokens=getattr(args, "reasoning_budget", None),
            repair_attempts=repair_attempts,
        )
    with translate(InvalidRequestError, "invalid request"):
        return RunRequest(
            prompt_id=args.prompt,
            profile=args.profile,
            inputs=merged_inputs,
            artifacts=merged_artifacts,
            overrides=overrides,
        )


def output_text(result: RunResult, *, raw: bool = False) -> str:
    """What ``run`` prints: for a valid ``json``/``json_schema`` output the parsed value as JSON
    (so it pipes to ``jq``, whatever prose or code fence the model wrapped it in); otherwise, or
    with ``raw``, the model's text."""
    validation = result.validation
    if raw or validation.format == "text" or not validation.valid:
        return result.output.text
    return json.dumps(validation.value, ensure_ascii=False)


def cmd_run(args: argparse.Namespace, reporter: Reporter) -> int:
    """Run one prompt: the parsed value of a JSON prompt, else the output text (``--raw``: always
    the text; ``--json``: the whole RunResult) on stdout; exit 1 and an ``output_invalid`` line
    when the output failed its contract."""
    engine = make_engine(args)
    request = build_request(args, definition=engine.prompts.get(args.prompt))
    if getattr(args, "stream", False):
        from scriptorium.cli.stream import run_streamed

        return run_streamed(engine, request, reporter)
    result = engine.run(request)
    if reporter.json_mode:
        reporter.raw_json(result.model_dump_json(by_alias=True))
    else:
        reporter.line(output_text(result, raw=args.raw))
        if reporter.err.isatty():
            reporter.note(format_summary(result))
    try:
        result.raise_for_validation()
    except OutputInvalidError as err:
        return reporter.failure(err)
    return 0


def cmd_prepare(args: argparse.Namespace, reporter: Reporter) -> int:
    """Everything but the LLM call."""
    engine = make_engine(args)
    request = build_request(args, definition=engine.prompts.get(args.prompt))
    prepared = engine.prepare(request)
    count = engine.count_tokens(request) if getattr(args, "count_tokens", False) else None
    if reporter.json_mode:
        if count is None:
            reporter.raw_json(prepared.model_dump_json(by_alias=True))
        else:
            data = prepared.model_dump(mode="json", by_alias=True)
            # `reason` only when there is one (an estimate standing in for a failed count).
            data["token_count"] = count.model_dump(mode="json", exclude_none=True)
            reporter.json(data)
    else:
        text = format_prepared(prepared)
        if count is not None:
            text += "\n" + format_token_count(count)
        reporter.line(text)
    return 0


def _prompt_entry(engine: Engine, prompt_id: str) -> dict[str, Any]:
    try:
        definition = engine.prompts.get(prompt_id)
    except ScriptoriumError as err:
        return {"id": prompt_id, "error": {"code": err.code, "message": err.message}}
    return {
        "id": prompt_id,
        "description": definition.description,
        "version": definition.version,
        "profile": definition.profile,
        "format": definition.output.format,
        "artifacts": sorted(definition.artifacts),
    }


def _profile_entry(engine: Engine, name: str) -> dict[str, Any]:
    try:
        profile = engine.load_profile(name)
    except ScriptoriumError as err:
        return {"name": name, "error": {"code": err.code, "message": err.message}}
    return {
        "name": name,
        "provider": profile.provider,
        "model": profile.model,
        "endpoint": profile.endpoint,
        "api_key_env": profile.api_key_env,
    }


def require_project(engine: Engine) -> None:
    """``InvalidRequestError`` (exit 2) when the root has no ``prompts/`` directory: listing or
    checking nothing from the wrong directory must not look like success."""
    prompts = engine.root / "prompts"
    if not prompts.is_dir():
        raise InvalidRequestError(
            f"no prompts/ directory in {engine.root.resolve()}: run from a project's root or "
            "pass --root DIR",
            field="root",
        )


def cmd_list(args: argparse.Namespace, reporter: Reporter) -> int:
    """Every prompt (with its description, profile and output format) and every profile."""
    engine = make_engine(args)
    require_project(engine)
    prompts = [_prompt_entry(engine, p) for p in engine.list_prompts()]
    profiles = [_profile_entry(engine, p) for p in engine.list_profiles()]
    if reporter.json_mode:
        reporter.json({"prompts": prompts, "profiles": profiles})
        return 0
    reporter.line("prompts:")
    width = max((len(p["id"]) for p in prompts), default=0)
    for p in prompts:
        if "error" in p:
            detail = f"(cannot load: {p['error']['code']}; run 'scriptorium check')"
        else:
            profile = f" [profile {p['profile']}]" if p["profile"] else ""
            detail = f"{p['format']:<11} {p['description'] or ''}{profile}"
        reporter.line(f"  {p['id']:<{width}}  {detail}")
    reporter.line("profiles:")
    width = max((len(p["name"]) for p in profiles), default=0)
    for p in profiles:
        if "error" in p:
            detail = f"(cannot load: {p['error']['code']}; run 'scriptorium check')"
        else:
            key = f" key ${p['api_key_env']}" if p["api_key_env"] else ""
            endpoint = f" at {p['endpoint']}" if p["endpoint"] else ""
            detail = f"{p['provider']} {p['model'] or '(no model)'}{endpoint}{key}"
        reporter.line(f"  {p['name']:<{width}}  {detail}")
    return 0


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def cmd_check(args: argparse.Namespace, reporter: Reporter) -> int:
    """Lint the project: a problem per line (or ``--format json``); exit 1 when any is found."""
    engine = make_engine(args)
    require_project(engine)
    problems = engine.check()
    counts = {"prompts": len(engine.list_prompts()), "profiles": len(engine.list_profiles())}
    errors = [p for p in problems if p.severity == "error"]
    if reporter.json_mode:
        reporter.json({"ok": not errors, **counts, "problems": [p.to_dict() for p in problems]})
    else:
        for problem in problems:
            reporter.line(str(problem))
        if not errors:
            warned = f", {_count(len(problems), 'warning')}" if problems else ""
            reporter.line(
                f"ok: {_count(counts['prompts'], 'prompt')} and "
                f"{_count(counts['profiles'], 'profile')}, no problems{warned}"
            )
    if errors:
        reporter.error("check_failed", f"{_count(len(errors), 'problem')} found")
        return 1
    return 0


def _verify_structured(args: argparse.Namespace, reporter: Reporter, engine: Engine) -> int:
    """``verify --structured``: the probe's verdict and what was sent; 0 only for enforced."""
    verdict = engine.verify_structured(args.profile, model=args.model)
    profile = engine.load_profile(args.profile)
    server = profile.options.get("server")
    if reporter.json_mode:
        reporter.json(
            {
                "ok": verdict.enforced,
                "profile": args.profile,
                "provider": profile.provider,
                "model": args.model or profile.model,
                "endpoint": profile.endpoint,
                "server": server,
                **verdict.to_dict(),
            }
        )
    else:
        where = f"{profile.provider}" + (f", server {server}" if server else "")
        reporter.line(f"{verdict.verdict}: profile {args.profile!r} ({where}): {verdict.why}")
        reporter.line("sent: " + json.dumps(verdict.sent, ensure_ascii=False, sort_keys=True))
        if verdict.answer is not None:
            label = "answer" if verdict.verdict != "refused" else "server said"
            reporter.line(f"{label}: {verdict.answer}")
    return 0 if verdict.enforced else 1


def cmd_verify(args: argparse.Namespace, reporter: Reporter) -> int:
    """A minimal real request through the profile's provider."""
    if not args.profile:
        raise ProfileRequiredError("verify needs --profile NAME")
    engine = make_engine(args)
    if getattr(args, "structured", False):
        return _verify_structured(args, reporter, engine)
    response = engine.verify(args.profile, model=args.model)
    profile = engine.load_profile(args.profile)
    model = response.model or args.model or profile.model
    if reporter.json_mode:
        reporter.json(
            {
                "ok": True,
                "profile": args.profile,
                "provider": profile.provider,
                "model": model,
                "endpoint": profile.endpoint,
                "response": response.model_dump(mode="json"),
            }
        )
    elif response.attempts == 0:
        reporter.line(
            f"ok: profile {args.profile!r} ({profile.provider}) is configured; "
            "this provider makes no network request to verify"
        )
    else:
        reporter.line(
            f"ok: profile {args.profile!r} reached {profile.provider} model {model} "
            f"in {response.latency_ms:.0f} ms"
        )
    return 0
