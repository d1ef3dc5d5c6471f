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

Lines are read, prepared (once each), run and written as a bounded pipeline
(:mod:`scriptorium.batch.pipeline`): memory follows ``--concurrency``, not the number of lines.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING

from scriptorium._journal import Journal
from scriptorium._sidefiles import SideFile
from scriptorium.batch.executor import BatchExecutor, Row, executor_named
from scriptorium.batch.lock import OutputLock
from scriptorium.batch.pipeline import ReorderWindow, feed, window_size
from scriptorium.batch.work import RowWork
from scriptorium.cli.batch_records import (
    Item,
    Record,
    Totals,
    check_journal,
    check_out,
    error_record,
    journal_of,
    read_done,
    report,
    result_record,
    stream_items,
)
from scriptorium.cli.commands import make_engine
from scriptorium.cli.output import EXIT_INTERRUPTED, Reporter, duration, usd
from scriptorium.errors import InvalidRequestError, ScriptoriumError, translate

if TYPE_CHECKING:
    from scriptorium.usecase.model import RunResult
    from scriptorium.usecase.plan import Plan

# read_done, report and result_record moved to scriptorium.cli.batch_records; still importable here.
__all__ = ["cmd_batch", "read_done", "report", "result_record", "run_lines"]


class _Batch:
    """Turns lines into records: the driver's side of a batch, whichever executor runs the calls.
    Results are journaled as they finish."""

    def __init__(self, work: RowWork, done: dict[str, Record], journal: Journal) -> None:
        self.work = work
        self.done = done
        self.journal = journal
        self.resumed = 0

    def start(self, item: Item) -> Record | Plan:
        """The record of a line that needs no call (a bad line, a failed prepare, a result
        already obtained), else the plan to run (prepared here, once: its hash is the key)."""
        if item.request is None:
            assert item.error is not None
            return error_record(item, item.error, None)
        try:
            plan = self.work.plan(item.request)
        except ScriptoriumError as err:
            return error_record(item, err, None)
        earlier = self.done.get(plan.prepared.request_hash)
        if earlier is not None:
            self.resumed += 1
            return {**earlier, "line": item.line, "id": item.id}
        return plan

    def finish(
        self, item: Item, outcome: RunResult | ScriptoriumError, request_hash: str
    ) -> tuple[Record, str]:
        """The record of a line that ran and its JSON line (encoded once: the journal and the
        output write the same text), journaled."""
        if isinstance(outcome, ScriptoriumError):
            record = error_record(item, outcome, request_hash)
            return record, _json_line(record)
        record = result_record(item, outcome, request_hash)
        line = _json_line(record)
        # One write of one whole line: a crash can tear only this line, never glue the next.
        self.journal.append(line)
        return record, line


def run_lines(
    work: RowWork,
    items: Iterable[Item],
    *,
    done: dict[str, Record],
    journal: Journal,
    executor: BatchExecutor,
    concurrency: int,
    sink: IO[str],
    on_done: Callable[[Record], None],
) -> tuple[int, int]:
    """Run every item through ``work`` on ``executor``, writing records to ``sink`` in input
    order as each prefix is complete, through the bounded window of
    :mod:`scriptorium.batch.pipeline` (a slow line holds the window; once it is full, no more
    lines are read until it finishes). A line whose request hash has a result in ``done`` is
    copied from it; every result is also appended to ``journal`` as it arrives. Returns the
    number of items and how many of them came from ``done``. On Ctrl-C the executor lets the
    calls in flight finish; they are journaled for the next attempt."""
    batch = _Batch(work, done, journal)

    def emit(written: tuple[Record, str]) -> None:
        record, line = written
        on_done(record)
        sink.write(line + "\n")

    window: ReorderWindow[tuple[Record, str]] = ReorderWindow(window_size(concurrency), emit)
    running: dict[int, Item] = {}  # the lines in flight (at most a window of them)

    def start(index: int, item: Item) -> Row | tuple[Record, str]:
        started = batch.start(item)
        if isinstance(started, dict):
            return started, _json_line(started)
        assert item.request is not None
        running[index] = item
        return Row(index, item.request, started.prepared, started)

    def finish(row: Row, outcome: RunResult | ScriptoriumError) -> tuple[Record, str]:
        return batch.finish(running.pop(row.index), outcome, row.prepared.request_hash)

    count = feed(
        work,
        items,
        start=start,
        finish=finish,
        window=window,
        executor=executor,
        concurrency=concurrency,
    )
    assert window.released == count, "the executor left rows undelivered"
    return count, batch.resumed


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
    """Run the batch; exit 0 when every line has a valid result, else 1 (details in ``--out``).
    One batch per ``--out`` at a time: a second one exits 2 naming the first's pid."""
    with OutputLock(Path(args.out_file)):
        return _batch(args, reporter)


def _batch(args: argparse.Namespace, reporter: Reporter) -> int:
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
    resumable = check_out(args, args.prompt)
    lines, items = stream_items(args, definition)
    out = Path(args.out_file)
    journal_path = journal_of(out)
    check_journal(journal_path, args.prompt)
    done = read_done(out, journal_path) if resumable else read_done(journal_path)
    totals = Totals()
    progress = Progress(reporter.err, lines) if reporter.err.isatty() else None

    def on_done(record: Record) -> None:
        totals.add(record)
        if progress is not None:
            progress.show(totals)

    with translate(InvalidRequestError, f"--out: cannot write next to {out}", field="out"):
        journal = Journal(journal_path)
        try:
            side = SideFile(out, text=True)
        except BaseException:
            journal.close()
            raise
    try:
        with journal:
            sink = side.handle
            lines, resumed = run_lines(
                engine.row_work(),
                items,
                done=done,
                journal=journal,
                executor=executor,
                concurrency=args.concurrency,
                sink=sink,
                on_done=on_done,
            )
    except BaseException as err:
        side.discard()
        if not isinstance(err, KeyboardInterrupt):
            raise
        if progress is not None:
            progress.end()
        reporter.error(
            "interrupted",
            f"stopped by the user; {totals.done} of {lines} rows finished and are kept "
            f"(in {journal_path}); run the same command again to resume: only the rest are sent",
        )
        return EXIT_INTERRUPTED
    with translate(InvalidRequestError, f"--out: cannot write {out}", field="out"):
        side.commit()
    journal_path.unlink(missing_ok=True)  # checked above to be a journal of this batch
    if progress is not None:
        progress.end()
    return report(reporter, lines, totals, resumed, out)


class Progress:
    """The terminal's progress line: rows done, failed, invalid, rate, ETA and cost so far."""

    def __init__(self, stream: IO[str], rows: int, clock: Callable[[], float] = time.monotonic):
        self.stream = stream
        self.rows = rows
        self.clock = clock
        self.started = clock()

    def show(self, totals: Totals) -> None:
        """Rewrite the line for ``totals``."""
        done = totals.done
        elapsed = max(self.clock() - self.started, 1e-6)
        rate = done / elapsed
        left = self.rows - done
        eta = f", ETA {duration(left / rate)}" if rate > 0 and left > 0 else ""
        counts = totals.counts
        self.stream.write(
            f"\rbatch: {done}/{self.rows} done, {counts['failed']} failed, "
            f"{counts['invalid']} invalid, {rate:.1f} rows/s{eta}, "
            f"{usd(totals.cost_micro)} so far "
        )
        self.stream.flush()

    def end(self) -> None:
        """End the line."""
        self.stream.write("\n")
        self.stream.flush()
