"""``scriptorium batch``: one prompt over a JSONL file of inputs, resumable.

Each input line is ``{"inputs": {...}, "artifacts": {...}, "id": ...}`` (every key optional); an
artifact is a path, or its content as ``{"text": ...}`` or ``{"base64": ..., "media_type": ...}``. Each
output line is ``{"line", "id", "request_hash", "valid", "result"}`` or
``{"line", "id", "request_hash", "error"}``, in input order.

Resuming: a line whose ``request_hash`` (from ``prepare``) already has a result in ``--out`` is not
run again; its earlier result is copied. Every record carries ``hash_version`` (the form of
``request_hash``); results recorded under another form cannot be matched, so a file holding any is
refused with a clear error instead of being silently run again. While the batch runs, finished results are also appended
to ``<out>.partial``, a journal that survives a crash or Ctrl-C and is read on the next start, so
no paid-for result is lost; ``--out`` itself is only replaced, whole and in order, at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from scriptorium._files import FileProblem, open_named_file, read_named_file
from scriptorium._journal import Journal
from scriptorium.artifact.model import ArtifactContent
from scriptorium.batch.executor import BatchExecutor, Row, executor_named
from scriptorium.cli.commands import artifact_ref, build_request, make_engine, read_inputs
from scriptorium.cli.inputs import typed_inputs
from scriptorium.cli.output import Reporter
from scriptorium.errors import InvalidRequestError, ScriptoriumError, translate
from scriptorium.hashing import REQUEST_HASH_VERSION

if TYPE_CHECKING:
    from scriptorium.engine import Engine
    from scriptorium.promptdef.model import PromptDefinition
    from scriptorium.usecase.model import PreparedRun, RunRequest, RunResult

__all__ = ["cmd_batch", "read_done", "report", "result_record"]

Record = dict[str, Any]
#: The most ``--in`` may hold.
MAX_IN_BYTES = 1 << 30
_LINE_KEYS = frozenset({"id", "inputs", "artifacts"})


@dataclass(frozen=True)
class _Item:
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


def _error_record(item: _Item, err: ScriptoriumError, request_hash: str | None) -> Record:
    return {
        "line": item.line,
        "id": item.id,
        "hash_version": REQUEST_HASH_VERSION,
        "request_hash": request_hash,
        "error": err.to_dict(),
    }


def result_record(item: _Item, result: RunResult) -> Record:
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
) -> _Item:
    try:
        data = json.loads(text)
    except ValueError as err:
        return _Item(number, None, error=InvalidRequestError(f"line {number} is not JSON: {err}"))
    if not isinstance(data, dict):
        return _Item(number, None, error=InvalidRequestError(f"line {number} is not an object"))
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
        return _Item(number, item_id, error=InvalidRequestError(f"line {number}: {problem}"))
    refs: dict[str, str | ArtifactContent] = {}
    for name, given in artifacts.items():
        if isinstance(given, str):
            refs[name] = artifact_ref(given, base)
            continue
        try:
            with translate(InvalidRequestError, f"line {number}: artifact {name!r}"):
                refs[name] = ArtifactContent.model_validate(given)
        except ScriptoriumError as err:
            return _Item(number, item_id, error=err)
    try:
        request = build_request(
            args,
            inputs={**shared.inputs, **inputs},
            artifacts={**shared.artifacts, **refs},
            definition=definition,
        )
    except ScriptoriumError as err:
        return _Item(number, item_id, error=err)
    return _Item(number, item_id, request=request)


def _read_items(args: argparse.Namespace, definition: PromptDefinition) -> list[_Item]:
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
        for number, line in enumerate(text.splitlines(), start=1)
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
            for line in handle:
                try:
                    record = json.loads(line)
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


class _Batch:
    """Turns lines into records: the driver's side of a batch, whichever executor runs the calls.
    Results are journaled as they finish."""

    def __init__(self, engine: Engine, done: dict[str, Record], journal: Journal) -> None:
        self.engine = engine
        self.done = done
        self.journal = journal
        self.resumed = 0

    def start(self, item: _Item) -> Record | PreparedRun:
        """The record of a line that needs no call (a bad line, a failed prepare, a result
        already obtained), else the prepared run to send."""
        if item.request is None:
            assert item.error is not None
            return _error_record(item, item.error, None)
        try:
            prepared = self.engine.prepare(item.request)
        except ScriptoriumError as err:
            return _error_record(item, err, None)
        earlier = self.done.get(prepared.request_hash)
        if earlier is not None:
            self.resumed += 1
            return {**earlier, "line": item.line, "id": item.id}
        return prepared

    def finish(
        self, item: _Item, outcome: RunResult | ScriptoriumError, request_hash: str
    ) -> Record:
        """The record of a line that ran, journaled."""
        if isinstance(outcome, ScriptoriumError):
            return _error_record(item, outcome, request_hash)
        record = result_record(item, outcome)
        # One write of one whole line: a crash can tear only this line, never glue the next.
        self.journal.append(_json_line(record))
        return record


class _InOrder:
    """Writes records to ``sink`` in input order as soon as each prefix is complete (records
    arrive from executor threads in any order)."""

    def __init__(self, sink: IO[str], on_done: Callable[[Record], None]) -> None:
        self.sink = sink
        self.on_done = on_done
        self.lock = threading.Lock()
        self.pending: dict[int, Record] = {}
        self.next_index = 0

    def add(self, index: int, record: Record) -> None:
        with self.lock:
            self.on_done(record)
            self.pending[index] = record
            while self.next_index in self.pending:
                record = self.pending.pop(self.next_index)
                self.sink.write(_json_line(record) + "\n")
                self.next_index += 1


def _execute(
    batch: _Batch,
    items: list[_Item],
    executor: BatchExecutor,
    concurrency: int,
    sink: IO[str],
    on_done: Callable[[Record], None],
) -> None:
    """Run every item on ``executor``, writing records to ``sink`` in input order. On Ctrl-C the
    executor lets the calls in flight finish; they are journaled for the next attempt."""
    writer = _InOrder(sink, on_done)
    rows: list[Row] = []
    for index, item in enumerate(items):
        started = batch.start(item)
        if isinstance(started, dict):
            writer.add(index, started)
        else:
            assert item.request is not None
            rows.append(Row(index, item.request, started))

    def deliver(row: Row, outcome: RunResult | ScriptoriumError) -> None:
        record = batch.finish(items[row.index], outcome, row.prepared.request_hash)
        writer.add(row.index, record)

    if rows:
        executor.execute(batch.engine, rows, deliver, concurrency=concurrency)
    assert writer.next_index == len(items), "the executor left rows undelivered"


def _json_line(record: Record) -> str:
    """One record as JSON text that always encodes as UTF-8: non-ASCII kept as is, unless some
    string (an error message quoting a server, say) holds a lone surrogate, which only the
    escaped form can carry."""
    line = json.dumps(record, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(record)
    return line


def cmd_batch(args: argparse.Namespace, reporter: Reporter) -> int:
    """Run the batch; exit 0 when every line has a valid result, else 1 (details in ``--out``)."""
    if getattr(args, "provider_batch", False):
        from scriptorium.cli.provider_batch import cmd_provider_batch

        if getattr(args, "executor", "local") != "local":
            raise InvalidRequestError(
                "--provider-batch sends the rows to the provider; it takes no --executor",
                field="executor",
            )

        return cmd_provider_batch(args, reporter)
    if args.concurrency < 1:
        raise InvalidRequestError("--concurrency must be at least 1", field="concurrency")
    executor = executor_named(
        getattr(args, "executor", "local"), address=getattr(args, "ray_address", None)
    )
    engine = make_engine(args)
    # A missing or broken prompt fails the batch, not each line.
    definition = engine.prompts.get(args.prompt)
    items = _read_items(args, definition)
    out = Path(args.out_file)
    journal_path = out.with_name(out.name + ".partial")
    temp_path = out.with_name(out.name + ".tmp")
    done = read_done(out, journal_path)
    counts = {"ok": 0, "invalid": 0, "failed": 0}
    progress = reporter.err.isatty()

    def on_done(record: Record) -> None:
        kind = "failed" if "error" in record else "ok" if record.get("valid") else "invalid"
        counts[kind] += 1
        if progress:
            finished = sum(counts.values())
            reporter.err.write(
                f"\rbatch: {finished}/{len(items)} done, {counts['failed']} failed, "
                f"{counts['invalid']} invalid"
            )
            reporter.err.flush()

    with translate(InvalidRequestError, f"--out: cannot write next to {out}", field="out"):
        journal = Journal(journal_path)
        sink = temp_path.open("w", encoding="utf-8")
    batch = _Batch(engine, done, journal)
    with journal, sink:
        _execute(batch, items, executor, args.concurrency, sink, on_done)
    with translate(InvalidRequestError, f"--out: cannot write {out}", field="out"):
        os.replace(temp_path, out)
    journal_path.unlink(missing_ok=True)
    if progress:
        reporter.err.write("\n")
    return report(reporter, len(items), counts, batch.resumed, out)


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
