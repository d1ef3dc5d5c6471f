"""How the command talks: exit codes, the one-line error report, and the human-readable views.

Every non-zero exit writes exactly one line to stderr: ``scriptorium: <code>: <message>``, or with
``--json`` the object ``{"error": {"code": ..., "message": ..., ...}}``. Messages come from the
errors themselves, which never carry a key value.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from typing import IO, TYPE_CHECKING, Any

import scriptorium.errors as errors
from scriptorium.prompt.model import content_text

if TYPE_CHECKING:
    from scriptorium.llm.model import Target, TokenCount
    from scriptorium.usecase.model import PreparedRun, RunResult

__all__ = [
    "EXIT_CODES",
    "Reporter",
    "exit_code",
    "format_prepared",
    "format_summary",
    "format_token_count",
    "plural",
]

#: The exit status of each sentinel (anything else that fails is 1).
EXIT_CODES: Mapping[type[errors.ScriptoriumError], int] = {
    errors.OutputInvalidError: 1,
    errors.InvalidRequestError: 2,
    errors.ProfileRequiredError: 3,
    errors.APIKeyEnvMissingError: 3,
    errors.APIKeyRequiredError: 3,
    errors.PromptLoadError: 4,
    errors.ProfileLoadError: 4,
    errors.ArtifactLoadError: 4,
    errors.PromptRenderError: 5,
    errors.LLMGenerateError: 6,
    errors.ValidationError: 7,
}
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def exit_code(err: errors.ScriptoriumError) -> int:
    """The exit status for ``err`` (by class, subclasses included)."""
    for cls in type(err).__mro__:
        code = EXIT_CODES.get(cls)
        if code is not None:
            return code
    return 1


class Reporter:
    """Writes results to stdout and the single error line to stderr, as text or JSON."""

    def __init__(self, *, json_mode: bool, out: IO[str] | None = None, err: IO[str] | None = None):
        self.json_mode = json_mode
        self.out = sys.stdout if out is None else out
        self.err = sys.stderr if err is None else err

    def line(self, text: str = "") -> None:
        """One line of normal output."""
        self.out.write(text + "\n")

    def json(self, value: Any) -> None:
        """One JSON document of normal output."""
        self.out.write(json.dumps(value, ensure_ascii=False, default=str) + "\n")

    def raw_json(self, text: str) -> None:
        """Already serialised JSON (a pydantic ``model_dump_json``)."""
        self.out.write(text + "\n")

    def error(self, code: str, message: str, **fields: Any) -> None:
        """The one stderr line of a failure."""
        if self.json_mode:
            body = {"code": code, "message": message, **fields}
            text = json.dumps({"error": body}, ensure_ascii=False, default=str)
        else:
            # One line, whatever the message holds.
            text = f"scriptorium: {code}: {' '.join(message.split())}"
        self.err.write(text + "\n")
        self.err.flush()

    def failure(self, err: errors.ScriptoriumError) -> int:
        """Report a sentinel and return its exit status."""
        data = err.to_dict()
        code, message = data.pop("code"), data.pop("message")
        self.error(code, message, **data)
        return exit_code(err)

    def note(self, text: str) -> None:
        """A human aside on stderr (only used when stderr is a terminal)."""
        self.err.write(text + "\n")
        self.err.flush()


def _setting(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, tuple | list):
        return json.dumps(list(value))
    return str(value)


def _block(title: str, text: str) -> Iterable[str]:
    yield f"--- {title} ---"
    yield from text.splitlines() or [""]


def _endpoint(target: Target) -> str:
    if target.endpoint is None:
        return "(provider default)"
    if target.endpoint_source == "env":
        return f"{target.endpoint} (env)"
    return (
        target.endpoint
        if target.endpoint_source is None
        else (f"{target.endpoint} ({target.endpoint_source})")
    )


def _region(target: Target) -> str:
    return f" (region {target.region})" if target.region else ""


def _reasoning_lines(prepared: PreparedRun) -> Iterable[str]:
    """The reasoning settings as the provider sends them, and how a level was mapped."""
    plan = prepared.reasoning
    if plan is None:
        return
    sent = json.dumps(plan.sent, ensure_ascii=False, sort_keys=True) if plan.sent else "nothing"
    yield f"reasoning  sent {sent}"
    for note in plan.notes:
        yield f"  {note}"


def format_prepared(prepared: PreparedRun) -> str:
    """``scriptorium prepare`` without ``--json``: what would be sent, where, how, and every hash."""
    target = prepared.target
    version = "" if prepared.prompt_version is None else f" (version {prepared.prompt_version})"
    key = f"${target.api_key_env}" if target.api_key_env else "none"
    if target.api_key_env and target.api_key_source == "default":
        key += " (default: the profile names no api_key_env)"
    elif target.api_key_env and target.api_key_source == "profile":
        key += " (profile)"
    lines = [
        f"prompt     {prepared.prompt_id}{version}",
        f"profile    {prepared.profile}",
        f"provider   {target.provider}",
        f"model      {target.model or '(provider default)'}",
        f"endpoint   {_endpoint(target)}",
        *([f"platform   {target.platform}" + _region(target)] if target.platform else []),
        *([f"api        {prepared.api}"] if prepared.api else []),
        f"key        {key}",
        "settings",
    ]
    why = {} if prepared.reasoning is None else prepared.reasoning.ignored
    settings = prepared.settings.model_dump()
    width = max(map(len, settings))
    for name, value in settings.items():
        source: str = prepared.settings_sources.get(name, "default")
        if name in prepared.ignored_settings:
            # Shown with its source, but not claimed to be sent: the provider does not take it.
            source += f", ignored: {why.get(name) or f'{target.provider} does not take it'}"
        lines.append(f"  {name:<{width}} {_setting(value):<12} ({source})")
    lines.extend(_reasoning_lines(prepared))
    output = prepared.output
    lines.append(
        f"output     {output.format}, parse {output.parse}, strategy {output.strategy}, "
        f"repair_attempts {output.repair_attempts}"
    )
    if prepared.schema_dropped:
        lines.append(
            f"  sent without {', '.join(prepared.schema_dropped)} (the {target.provider} schema "
            "takes less; the whole schema is still validated here)"
        )
    if prepared.artifacts:
        lines.append("artifacts")
        for art in prepared.artifacts:
            where = art.ref if art.source == "file" else f"(by value) {art.ref}".rstrip()
            lines.append(f"  {art.name}: {where} ({art.media_type}, {art.size} bytes) {art.sha256}")
    if prepared.cache is not None:
        cache = prepared.cache
        where = ", ".join(
            ("system" if p.message is None else f"message {p.message}")
            + ("" if p.offset is None else f"@{p.offset}")
            + f" {p.ttl}"
            for p in cache.points
        )
        lines.append(f"cache      {cache.mode}, ttl {cache.ttl}" + (f": {where}" if where else ""))
    if prepared.session_id is not None:
        lines.append(f"session_id {prepared.session_id}")
    lines.append("hashes")
    hashes = {
        "definition_hash": prepared.definition_hash,
        "profile_hash": prepared.profile_hash,
        "inputs_hash": prepared.inputs_hash,
        "schema_hash": output.schema_hash,
        "rendered_prompt_hash": prepared.rendered_prompt_hash,
        "request_hash": prepared.request_hash,
    }
    lines.extend(f"  {name:<21} {value}" for name, value in hashes.items() if value is not None)
    if prepared.system is not None:
        lines.extend(_block("system", prepared.system))
    for message in prepared.messages:
        lines.extend(_block(message.role, content_text(message.content)))
    return "\n".join(lines)


def format_summary(result: RunResult) -> str:
    """The one-line account of a run that ``run`` prints on a terminal's stderr."""
    usage = result.usage
    verdict = "valid" if result.validation.valid else "INVALID"
    if result.validation.repaired:
        verdict += " (repaired)"
    return (
        f"[{result.prepared.prompt_id} via {result.prepared.profile}: {result.model}, {verdict}, "
        f"{usage.input_tokens} in / {usage.output_tokens} out tokens, "
        f"${usage.cost_micro / 1_000_000:.6f}, {result.duration_ms:.0f} ms]"
    )


def format_token_count(count: TokenCount) -> str:
    """The line ``prepare --count-tokens`` adds."""
    how = "estimated locally" if count.estimated else f"counted by {count.provider}"
    if count.reason:
        how += f": {count.reason}"
    return f"tokens     {count.input_tokens} input ({how})"


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` with ``noun`` as English says it: ``1 case``, ``2 cases`` (``many`` for an
    irregular plural: ``plural(2, "batch", "batches")``)."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def usd(cost_micro: int) -> str:
    """Micro-USD as dollars for people (``$0.001234``)."""
    return f"${cost_micro / 1_000_000:.6f}"


def duration(seconds: float) -> str:
    """A span of time for a progress line: ``42s``, ``3m07s``, ``2h05m``."""
    whole = int(seconds + 0.5)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
