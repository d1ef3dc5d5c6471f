"""What ``scriptorium batch`` shares between a local batch and a provider batch: the input lines
read into items, the output records, the results of earlier runs, and the summary."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scriptorium._files import FileProblem, open_named_file, read_named_file
from scriptorium._journal import jsonl_file_lines, jsonl_lines, load_json
from scriptorium.artifact.model import ArtifactContent
from scriptorium.cli.commands import artifact_ref, build_request, read_inputs
from scriptorium.cli.inputs import typed_inputs
from scriptorium.cli.output import Reporter
from scriptorium.errors import InvalidRequestError, ScriptoriumError, translate
from scriptorium.hashing import REQUEST_HASH_VERSION

if TYPE_CHECKING:
    from scriptorium.promptdef.model import PromptDefinition
    from scriptorium.usecase.model import RunRequest, RunResult

__all__ = [
    "MAX_IN_BYTES",
    "Item",
    "Record",
    "error_record",
    "read_done",
    "read_items",
    "report",
    "result_record",
]

Record = dict[str, Any]
#: The most ``--in`` may hold.
MAX_IN_BYTES = 1 << 30
_LINE_KEYS = frozenset({"id", "inputs", "artifacts"})


@dataclass(frozen=True)
class Item:
    """One input line: its request, or why it has none."""

    line: int
    id: Any
    request: RunRequest | None = None
    error: ScriptoriumError | None = None


@dataclass(frozen=True)
class _Shared:
    """What the command line gives every line (a line's own values win)."""

    inputs: dict[str, Any]
    artifacts: dict[str, str | ArtifactContent]


def error_record(item: Item, err: ScriptoriumError, request_hash: str | None) -> Record:
    """The output line of a line that failed (before or after its call)."""
    return {
        "line": item.line,
        "id": item.id,
        "hash_version": REQUEST_HASH_VERSION,
        "request_hash": request_hash,
        "error": err.to_dict(),
    }


def result_record(item: Item, result: RunResult) -> Record:
    """The output line of a line that ran (a local run or a provider batch row alike)."""
    return {
        "line": item.line,
        "id": item.id,
        "hash_version": REQUEST_HASH_VERSION,
        "request_hash": result.prepared.request_hash,
        "valid": result.validation.valid,
        "result": result.model_dump(mode="json", by_alias=True),
    }


def _parse_line(
    args: argparse.Namespace,
    number: int,
    text: str,
    base: Path,
    shared: _Shared,
    definition: PromptDefinition,
) -> Item:
    try:
        data = load_json(text)
    except ValueError as err:
        return Item(number, None, error=InvalidRequestError(f"line {number} is not JSON: {err}"))
    if not isinstance(data, dict):
        return Item(number, None, error=InvalidRequestError(f"line {number} is not an object"))
    item_id = data.get("id")
    unknown = sorted(set(data) - _LINE_KEYS)
    inputs, artifacts = data.get("inputs", {}), data.get("artifacts", {})
    problem = None
    if unknown:
        problem = f"unknown key {unknown[0]!r} (expected id, inputs, artifacts)"
    elif not isinstance(inputs, dict):
        problem = "inputs must be an object"
    elif not isinstance(artifacts, dict) or not all(
        isinstance(v, str | dict) for v in artifacts.values()
    ):
        problem = "artifacts must be an object of name -> path or content"
    if problem is not None:
        return Item(number, item_id, error=InvalidRequestError(f"line {number}: {problem}"))
    refs: dict[str, str | ArtifactContent] = {}
    for name, given in artifacts.items():
        if isinstance(given, str):
            refs[name] = artifact_ref(given, base)
            continue
        try:
            with translate(InvalidRequestError, f"line {number}: artifact {name!r}"):
                refs[name] = ArtifactContent.model_validate(given)
        except ScriptoriumError as err:
            return Item(number, item_id, error=err)
    try:
        request = build_request(
            args,
            inputs={**shared.inputs, **inputs},
            artifacts={**shared.artifacts, **refs},
            definition=definition,
        )
    except ScriptoriumError as err:
        return Item(number, item_id, error=err)
    return Item(number, item_id, request=request)


def read_items(args: argparse.Namespace, definition: PromptDefinition) -> list[Item]:
    """Every non-blank line of ``--in`` as an item, the command line's inputs and artifacts
    giving each line its defaults (``InvalidRequestError`` when the file cannot be read)."""
    base = Path(args.artifact_root or os.getcwd())
    # Options give every line its defaults; a line's own inputs and artifacts win over them.
    shared = _Shared(
        inputs={
            **read_inputs(args.inputs_file),
            **typed_inputs(args.input_pairs, definition.inputs),
        },
        artifacts={name: artifact_ref(path, base) for name, path in args.artifact_pairs},
    )
    per_line = argparse.Namespace(
        **{**vars(args), "inputs_file": None, "input_pairs": [], "artifact_pairs": []}
    )
    try:
        data = read_named_file(args.in_file, max_bytes=MAX_IN_BYTES, label=args.in_file)
    except FileProblem as err:
        raise InvalidRequestError(f"--in: {err}", field="in") from err
    with translate(InvalidRequestError, f"--in: cannot read {args.in_file}", field="in"):
        text = data.decode("utf-8")
    return [
        _parse_line(per_line, number, line, base, shared, definition)
        for number, line in jsonl_lines(text)
        if line.strip()
    ]


def read_done(*paths: Path) -> dict[str, Record]:
    """Results already obtained, by ``request_hash``, from earlier output files (later files win).
    Error lines and lines that do not parse (a torn last line) are ignored. A result recorded
    under another request hash form is refused (``InvalidRequestError``): it could never match."""
    done: dict[str, Record] = {}
    for path in paths:
        try:
            handle = open_named_file(path, label=path.name)
        except FileProblem:
            continue
        with handle:
            for _, line in jsonl_file_lines(handle):
                try:
                    record = load_json(line)
                except ValueError:  # a torn line (or bytes that are not UTF-8)
                    continue
                if isinstance(record, dict) and "result" in record:
                    _check_form(record, path)
                    request_hash = record.get("request_hash")
                    if isinstance(request_hash, str):
                        done[request_hash] = record
    return done


def _check_form(record: Record, path: Path) -> None:
    version = record.get("hash_version", 1)
    if version != REQUEST_HASH_VERSION:
        raise InvalidRequestError(
            f"{path} holds results recorded under request hash form {version} (this scriptorium "
            f"writes form {REQUEST_HASH_VERSION}, which leaves out the endpoint), so they cannot "
            "be matched to the lines to resume; move the file away to run every line again",
            field="out",
        )


def report(reporter: Reporter, lines: int, counts: dict[str, int], resumed: int, out: Path) -> int:
    """Print the summary of a finished batch; the exit status (1 when a line failed or gave
    invalid output)."""
    summary = {"lines": lines, **counts, "resumed": resumed, "out": str(out)}
    if reporter.json_mode:
        reporter.json(summary)
    else:
        reporter.line(
            f"{lines} lines: {counts['ok']} valid, {counts['invalid']} invalid, "
            f"{counts['failed']} failed ({resumed} from earlier results) -> {out}"
        )
    if counts["invalid"] or counts["failed"]:
        reporter.error(
            "batch_failed",
            f"{counts['failed']} of {lines} lines failed and {counts['invalid']} "
            f"gave invalid output; see {out}",
        )
        return 1
    return 0
