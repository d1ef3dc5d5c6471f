"""What ``scriptorium batch`` shares between a local batch and a provider batch: the input lines
read into items, the output records, the results of earlier runs, and the summary."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from scriptorium._files import FileProblem, open_named_file
from scriptorium._journal import jsonl_file_lines, load_json
from scriptorium.artifact.model import ArtifactContent
from scriptorium.cli.commands import artifact_base, artifact_ref, build_request, read_inputs
from scriptorium.cli.output import Reporter, usd
from scriptorium.errors import InvalidRequestError, ScriptoriumError, translate
from scriptorium.hashing import REQUEST_HASH_VERSION
from scriptorium.llm.pricing import gateway_cost_micro
from scriptorium.promptdef.arguments import typed_inputs

if TYPE_CHECKING:
    from scriptorium.promptdef.model import PromptDefinition
    from scriptorium.usecase.model import RunRequest, RunResult

__all__ = [
    "JOURNAL_SUFFIX",
    "MAX_IN_BYTES",
    "Item",
    "Record",
    "Totals",
    "check_journal",
    "check_out",
    "error_record",
    "journal_of",
    "read_done",
    "read_items",
    "report",
    "result_record",
    "stream_items",
    "usd",
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


def result_record(item: Item, result: RunResult, request_hash: str | None = None) -> Record:
    """The output line of a line that ran (a local run or a provider batch row alike).

    ``request_hash`` is the row's key, what a resume looks its result up by: the hash of the
    line's request as prepared on its own profile (None: the result's). A run that fell back
    answered with another profile's request (``result.prepared``), but the line, prepared again
    on the next start, still has the first profile's hash: keyed by that, it is found."""
    return {
        "line": item.line,
        "id": item.id,
        "hash_version": REQUEST_HASH_VERSION,
        "request_hash": result.prepared.request_hash if request_hash is None else request_hash,
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
    return list(stream_items(args, definition)[1])


def stream_items(
    args: argparse.Namespace, definition: PromptDefinition
) -> tuple[int, Iterator[Item]]:
    """How many items ``--in`` holds, and the items, read one line at a time as they are taken
    (what :func:`read_items` lists). The file is checked whole first, in one pass that holds a
    line at a time: bytes that are not UTF-8 anywhere fail the batch before any line runs
    (``InvalidRequestError``), as they always did."""
    base = artifact_base(args)
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
    count = 0
    reading = translate(InvalidRequestError, f"--in: cannot read {args.in_file}", field="in")
    with _open_in(args) as handle, reading:
        for _, raw in jsonl_file_lines(handle):
            if raw.decode("utf-8").strip():
                count += 1

    def items() -> Iterator[Item]:
        with _open_in(args) as handle:
            for number, raw in jsonl_file_lines(handle):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:  # the file changed since it was checked
                    yield Item(
                        number, None, error=InvalidRequestError(f"line {number} is not UTF-8")
                    )
                    continue
                if line.strip():
                    yield _parse_line(per_line, number, line, base, shared, definition)

    return count, items()


def _open_in(args: argparse.Namespace) -> IO[bytes]:
    """``--in``, opened for reading line by line (at most :data:`MAX_IN_BYTES`)."""
    try:
        handle = open_named_file(args.in_file, label=args.in_file)
    except FileProblem as err:
        raise InvalidRequestError(f"--in: {err}", field="in") from err
    size = os.fstat(handle.fileno()).st_size
    if size > MAX_IN_BYTES:
        handle.close()
        raise InvalidRequestError(
            f"--in: {args.in_file} is larger than {MAX_IN_BYTES} bytes ({size}+)", field="in"
        )
    return handle


def check_out(args: argparse.Namespace, prompt_id: str) -> bool:
    """The one rule that keeps ``batch`` from destroying a file, for local and provider batches:
    ``--out`` must not be ``--in`` (``InvalidRequestError``, exit 2); an existing ``--out`` must
    be a batch output of this same prompt (every line a batch record, none of another prompt),
    unless ``--overwrite`` says to replace it. True when ``--out`` may be resumed from (False:
    it is being overwritten, its lines are not results of this batch)."""
    out, source = Path(args.out_file), Path(args.in_file)
    if _same_file(out, source):
        raise InvalidRequestError(
            f"--out {out} is the --in file: the results would replace the inputs; write them "
            "to another file",
            field="out",
        )
    foreign = _foreign_line(out, prompt_id)
    if foreign is None:
        return True
    if getattr(args, "overwrite", False):
        return False
    raise InvalidRequestError(
        f"--out {out} is not a batch output of {prompt_id!r} ({foreign}); it would be "
        "replaced: choose another --out, or pass --overwrite to replace it",
        field="out",
    )


#: What the journal's name adds to the output's.
JOURNAL_SUFFIX = ".partial"


def journal_of(out: Path) -> Path:
    """The journal of output ``out``: the results of a run that has not finished yet."""
    return out.with_name(out.name + JOURNAL_SUFFIX)


def check_journal(journal: Path, prompt_id: str) -> None:
    """The journal's half of the rule of :func:`check_out`: what sits at the journal's name is
    read, appended to and finally removed only when it is a journal of this prompt (every
    complete line a batch record of it; a torn last line is a crash's). Anything else (a user's
    own file, a symbolic link, a directory) is refused naming it (``InvalidRequestError``,
    exit 2) and left as it is."""
    if not os.path.lexists(journal):
        return
    if os.path.islink(journal) or not journal.is_file():
        why = "a symbolic link" if os.path.islink(journal) else "not a regular file"
        raise InvalidRequestError(
            f"{journal} is {why}; batch keeps its journal under that name and will not follow "
            "or replace it: move it away",
            field="out",
        )
    foreign = _foreign_line(journal, prompt_id, torn_tail=not _ends_a_line(journal))
    if foreign is not None:
        raise InvalidRequestError(
            f"{journal} is not a batch journal of {prompt_id!r} ({foreign}); batch keeps its "
            "journal under that name and will not read or remove this file: move it away",
            field="out",
        )


def _ends_a_line(path: Path) -> bool:
    # A journal torn by a crash ends inside a line; a file ending with a newline was not torn.
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                return True
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"
    except OSError:
        return True


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _foreign_line(path: Path, prompt_id: str, *, torn_tail: bool = False) -> str | None:
    """Why ``path`` is not (only) a batch output of ``prompt_id``: the first line that is not a
    batch record, or a record of another prompt; None when it is one (or is absent or empty).
    ``torn_tail``: a last line that is not JSON, after at least one record, is a record a crash
    cut short (a journal's)."""
    try:
        handle = open_named_file(path, label=path.name)
    except FileProblem as err:
        if err.kind == "missing":
            return None
        raise InvalidRequestError(f"--out: {err}", field="out") from err
    torn: str | None = None
    records = 0
    with handle:
        for number, raw in jsonl_file_lines(handle):
            if torn is not None:
                return torn  # a line after it: not a torn tail
            if not raw.strip():
                continue
            try:
                record = load_json(raw)
            except ValueError:
                torn = f"line {number} is not JSON"
                if torn_tail and records:
                    continue
                return torn
            records += 1
            if not _is_record(record):
                return f"line {number} is not a batch record"
            other = _prompt_of(record)
            if other is not None and other != prompt_id:
                return f"line {number} is a result of prompt {other!r}"
    return None


def _is_record(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and "line" in record
        and "request_hash" in record
        and ("result" in record or "error" in record)
    )


def _prompt_of(record: Record) -> str | None:
    result = record.get("result")
    if isinstance(result, dict):
        prepared = result.get("prepared")
        found = prepared.get("prompt_id") if isinstance(prepared, dict) else None
    else:
        error = record.get("error")
        found = error.get("prompt_id") if isinstance(error, dict) else None
    return found if isinstance(found, str) else None


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


class Totals:
    """What a batch's records add up to: rows by kind, tokens and cost (``cost_micro`` of every
    result the output holds, earlier ones included), and apart from it the cost gateways
    reported (``gateway_cost_micro``: for model aliases scriptorium cannot price)."""

    def __init__(self) -> None:
        self.counts = {"ok": 0, "invalid": 0, "failed": 0}
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_micro = 0
        self.gateway_cost_micro = 0
        #: The first failed line's error (code and message, as its record holds them), and the
        #: codes of every failed line: a batch that failed for one reason says it.
        self.first_error: tuple[str, str] | None = None
        self.error_codes: set[str] = set()

    def add(self, record: Record) -> None:
        """Count one output record."""
        kind = "failed" if "error" in record else "ok" if record.get("valid") else "invalid"
        self.counts[kind] += 1
        error = record.get("error")
        if isinstance(error, dict):
            code = str(error.get("code") or "error")
            self.error_codes.add(code)
            if self.first_error is None:
                self.first_error = (code, str(error.get("message") or ""))
        result = record.get("result")
        usage = result.get("usage") if isinstance(result, dict) else None
        if isinstance(usage, dict):
            self.input_tokens += (
                _count(usage, "input_tokens")
                + _count(usage, "cache_read_input_tokens")
                + _count(usage, "cache_creation_input_tokens")
            )
            self.output_tokens += _count(usage, "output_tokens")
            self.cost_micro += _count(usage, "cost_micro")
        if isinstance(result, dict):
            self.gateway_cost_micro += gateway_cost_micro(result.get("metadata"))

    @property
    def done(self) -> int:
        """Records counted."""
        return sum(self.counts.values())


def _count(usage: dict[str, Any], name: str) -> int:
    value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _why(totals: Totals) -> str:
    """Why lines failed, when the records say: every line's one reason, else the first's."""
    first = totals.first_error
    if first is None:
        return ""
    code, message = first
    shown = " ".join(message.split())[:300]
    if len(totals.error_codes) == 1 and totals.counts["failed"] == totals.done:
        every = "the only line" if totals.done == 1 else f"all {totals.done} lines"
        return f" ({every} failed with {code}: {shown})"
    return f" (the first failure: {code}: {shown})"


def report(
    reporter: Reporter, lines: int, totals: Totals | dict[str, int], resumed: int, out: Path
) -> int:
    """Print the summary of a finished batch (rows, valid, invalid, failed, tokens, cost); the
    exit status (1 when a line failed or gave invalid output). ``totals`` may still be the
    counts by kind alone (``{"ok", "invalid", "failed"}``), as callers gave them before."""
    if isinstance(totals, dict):
        counted = Totals()
        counted.counts.update(totals)
        totals = counted
    counts = totals.counts
    tokens = totals.input_tokens + totals.output_tokens
    summary: dict[str, Any] = {
        "lines": lines,
        "rows": lines,
        **counts,
        "valid": counts["ok"],
        "resumed": resumed,
        "input_tokens": totals.input_tokens,
        "output_tokens": totals.output_tokens,
        "tokens": tokens,
        "cost_micro": totals.cost_micro,
        "gateway_cost_micro": totals.gateway_cost_micro,
        "out": str(out),
    }
    first = totals.first_error
    if first is not None:
        summary["first_error"] = {"code": first[0], "message": first[1]}
    if reporter.json_mode:
        reporter.json(summary)
    else:
        gateway = (
            f", gateway reported {usd(totals.gateway_cost_micro)}"
            if totals.gateway_cost_micro
            else ""
        )
        reporter.line(
            f"{lines} lines: {counts['ok']} valid, {counts['invalid']} invalid, "
            f"{counts['failed']} failed ({resumed} from earlier results); {tokens} tokens "
            f"({totals.input_tokens} in, {totals.output_tokens} out), cost_micro "
            f"{totals.cost_micro} ({usd(totals.cost_micro)}{gateway}) -> {out}"
        )
    if counts["invalid"] or counts["failed"]:
        reporter.error(
            "batch_failed",
            f"{counts['failed']} of {lines} lines failed and {counts['invalid']} "
            f"gave invalid output{_why(totals)}; see {out}",
        )
        return 1
    return 0
