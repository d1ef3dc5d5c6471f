"""``scriptorium batch --provider-batch``: the same input and output files as a local batch, with
the rows sent through the provider's batch API at half price.

Lines whose request already has a result in ``--out`` are copied, as in a local batch; the rest go
to one provider batch job whose state lives in ``--state`` (default ``<out>.state.json``). When
that file exists the job is resumed instead of sent again, so a killed command started again pays
for no row twice. ``--out`` is replaced whole, in input order, at the end; only then is the state
file removed.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from scriptorium._sidefiles import replacing
from scriptorium.batch.job import CRASH_ENV, crash_at, custom_id_of
from scriptorium.batch.store import StateFile
from scriptorium.cli.batch_records import (
    Record,
    Totals,
    check_out,
    error_record,
    read_done,
    read_items,
    report,
    result_record,
)
from scriptorium.cli.commands import make_engine
from scriptorium.cli.output import EXIT_INTERRUPTED, Reporter, plural
from scriptorium.errors import InvalidRequestError, ScriptoriumError, translate

if TYPE_CHECKING:
    from scriptorium.batch.job import BatchJob, StepHook
    from scriptorium.engine import Engine
    from scriptorium.llm.batches import BatchLimits
    from scriptorium.usecase.model import RunRequest

__all__ = ["cmd_provider_batch"]


def _limits(args: argparse.Namespace, engine: Engine, provider: str | None) -> BatchLimits | None:
    from scriptorium.llm.batches import BatchLimits

    size = args.batch_size
    if size is None:
        return None
    if size < 1:
        raise InvalidRequestError("--batch-size must be at least 1", field="batch_size")
    spec = None if provider is None else engine.providers.find(provider)
    base = None if spec is None else spec.batch_limits
    if base is None:  # a provider without batches: the job refuses it when opening its API
        return None
    return BatchLimits(min(size, base.max_requests), base.max_bytes)


def _crash_hook() -> StepHook | None:
    """The crash test hook the environment asks for (see ``scriptorium.batch.job.CRASH_ENV``)."""
    wanted = os.environ.get(CRASH_ENV)
    return crash_at(wanted) if wanted else None


def _no_step(step: str) -> None:
    """The step hook when no crash test asks for one."""


def _job(
    engine: Engine,
    store: StateFile,
    to_send: list[tuple[int, RunRequest, str]],
    limits: BatchLimits | None,
    on_step: StepHook | None,
) -> BatchJob:
    """The job for ``to_send``: resumed from ``store`` when it exists, else submitted."""
    if not store.exists():
        return engine.submit_batch(
            [r for _, r, _ in to_send], state=store.path, limits=limits, on_step=on_step
        )
    saved = store.load()
    wanted = [custom_id_of(h) for _, _, h in to_send]
    if [row.custom_id for row in saved.rows] != wanted:
        raise InvalidRequestError(
            f"--state {store.path} belongs to another batch (other inputs, prompt or profile); "
            "finish that one or delete the file",
            field="state",
        )
    return engine.resume_batch(store.path, limits=limits, on_step=on_step)


def cmd_provider_batch(args: argparse.Namespace, reporter: Reporter) -> int:
    """Run the batch through the provider's batch API; exit as a local batch does."""
    if args.poll_s <= 0:
        raise InvalidRequestError("--poll-s must be positive", field="poll_s")
    on_step = _crash_hook()
    engine = make_engine(args)
    # A missing or broken prompt fails the batch, not each line.
    definition = engine.prompts.get(args.prompt)
    resumable = check_out(args, args.prompt)
    items = read_items(args, definition)
    out = Path(args.out_file)
    store = StateFile(args.state or out.with_name(out.name + ".state.json"))
    done = read_done(out) if resumable else {}
    records: list[Record | None] = [None] * len(items)
    to_send: list[tuple[int, RunRequest, str]] = []
    resumed = 0
    for index, item in enumerate(items):
        if item.request is None:
            assert item.error is not None
            records[index] = error_record(item, item.error, None)
            continue
        try:
            request_hash = engine.prepare(item.request).request_hash
        except ScriptoriumError as err:
            records[index] = error_record(item, err, None)
            continue
        earlier = done.get(request_hash)
        if earlier is not None:
            records[index] = {**earlier, "line": item.line, "id": item.id}
            resumed += 1
        else:
            to_send.append((index, item.request, request_hash))
    if to_send:
        provider = engine.prepare(to_send[0][1]).target.provider
        job = _job(engine, store, to_send, _limits(args, engine, provider), on_step)
        # Always, terminal or not: a day-long job under nohup must not lose its id and state.
        status = job.status()
        reporter.note(
            f"batch: {plural(status.requests, 'request')} for {plural(status.rows, 'line')} in "
            f"{status.chunks} {provider} {'batch' if status.chunks == 1 else 'batches'} "
            f"(job {job.id}, state {store.path}); waiting for results"
        )
        try:
            job.wait(args.poll_s)
        except KeyboardInterrupt:
            reporter.error(
                "interrupted",
                f"stopped waiting; the job {job.id} goes on at the provider and its state is "
                f"kept in {store.path}: run the same command again to pick up its results",
            )
            return EXIT_INTERRUPTED
        for (index, _, request_hash), outcome in zip(to_send, job.results(), strict=True):
            item = items[index]
            records[index] = (
                error_record(item, outcome, request_hash)
                if isinstance(outcome, ScriptoriumError)
                else result_record(item, outcome, request_hash)
            )
    totals = _write(out, records, on_step or _no_step)
    if to_send or _settled(store, done):
        store.remove()
    return report(reporter, len(items), totals, resumed, out)


def _settled(store: StateFile, done: dict[str, Record]) -> bool:
    """Whether a state file found with nothing left to send is this output's own (killed after
    ``--out`` was written): every request it holds has its result there. Another job's state is
    left alone."""
    if not store.exists():
        return False
    answered = {custom_id_of(h) for h in done}
    try:
        saved = store.load()
    except InvalidRequestError:
        return False
    return all(row.custom_id is None or row.custom_id in answered for row in saved.rows)


def _write(out: Path, records: list[Record | None], on_step: StepHook) -> Totals:
    """Replace ``out`` with every record, in input order; what they add up to. ``on_step`` is
    told ``writing-results`` half way through."""
    totals = Totals()
    # Through a side file created exclusively beside it, never a fixed name.
    with (
        translate(InvalidRequestError, f"--out: cannot write {out}", field="out"),
        replacing(out) as sink,
    ):
        for number, record in enumerate(records):
            assert record is not None
            totals.add(record)
            sink.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
            if number == len(records) // 2:
                sink.flush()
                on_step("writing-results")
    return totals
