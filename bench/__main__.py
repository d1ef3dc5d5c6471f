"""``python -m bench``: every benchmark, one table each, ratios from the same run.

python -m bench                 # the full run (several minutes)
python -m bench --smoke         # a few calls per row: proves it still runs (CI)
python -m bench --only sync,aseq,async
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from bench import calls, firstrun, imports, memory, overhead
from bench.rows import ROWS, Row
from bench.server import serve
from bench.stats import Summary, format_table, machine, paired_ratio, summarize, versions
from bench.task import make_project

SECTIONS = ("sync", "aseq", "async", "memory", "first", "overhead", "imports")


@dataclass(frozen=True)
class Sizes:
    """How much work each section does."""

    sync_calls: int
    sync_blocks: int
    warmup: int
    async_total: int
    concurrency: int
    async_blocks: int
    latency_s: float
    overhead_runs: int
    overhead_blocks: int
    import_repeats: int
    memory_repeats: int = 3


FULL = Sizes(200, 7, 30, 1000, 200, 5, 0.05, 300, 7, 5, 3)
SMOKE = Sizes(3, 1, 1, 20, 10, 1, 0.05, 5, 1, 1, 1)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="a few calls per row (CI)")
    parser.add_argument("--only", default=",".join(SECTIONS), help="sections, comma-separated")
    parser.add_argument("--rows", default="", help="contenders to keep (names, comma-separated)")
    parser.add_argument("--blocks", type=int, default=0, help="blocks per section (0: default)")
    return parser.parse_args(argv)


def _cell(summary: Summary | None, fmt: str) -> str:
    return "-" if summary is None else summary.show(fmt)


def _ratio_cell(m: calls.Measured, floor: calls.Measured) -> str:
    if m is floor:
        return "1.00"
    ratio = m.ratio(floor)
    return "-" if ratio is None else ratio.show("{:.2f}")


def _cpu_ratio_cell(m: calls.Measured, floor: calls.Measured) -> str:
    if m is floor:
        return "1.00"
    if not m.cpu or len(m.cpu) != len(floor.cpu):
        return "-"
    return paired_ratio(m.cpu, floor.cpu).show("{:.2f}")


def _calls_table(measured: list[calls.Measured], unit: str) -> str:
    floor = next(m for m in measured if m.row.kind == "floor")
    rows = [
        [
            m.row.name,
            _cell(m.summary(), "{:.0f}"),
            _ratio_cell(m, floor),
            _cell(summarize(m.cpu) if m.cpu else None, "{:.0f}"),
            _cpu_ratio_cell(m, floor),
            m.note or m.row.what,
        ]
        for m in measured
    ]
    header = [
        "row",
        unit,
        "× floor",
        "client CPU µs per call",
        "client CPU × floor",
        "what / note",
    ]
    return format_table(header, rows)


def _find(measured: list[calls.Measured], kind: str) -> calls.Measured | None:
    return next((m for m in measured if m.row.kind == kind), None)


def _call_verdicts(
    measured: list[calls.Measured], name: str, bound: float, lower_is_better: bool
) -> list[str]:
    floor = _find(measured, "floor")
    if floor is None:
        return []
    sign = "≤" if lower_is_better else "≥"
    lines: list[str] = []
    for ours in (m for m in measured if m.row.kind == "ours"):
        ratio = ours.ratio(floor)
        if ratio is None:
            lines.append(f"- not measured: {ours.row.name}, {name} ({ours.note or floor.note})")
            continue
        ok = ratio.median <= bound if lower_is_better else ratio.median >= bound
        cpu = (
            f"; client CPU {paired_ratio(ours.cpu, floor.cpu).median:.2f}×"
            if ours.cpu and len(ours.cpu) == len(floor.cpu)
            else ""
        )
        lines.append(
            f"- {'met' if ok else 'MISSED'}: {ours.row.name}, {name} {sign} {bound:.2f}× floor "
            f"({ratio.median:.2f}×{cpu})"
        )
    earlier, ours2 = _find(measured, "floor2"), _find(measured, "ours2")
    if earlier is not None and ours2 is not None:
        paired = ours2.ratio(earlier)
        if paired is not None:
            lines.append(
                f"- (earlier floor) {ours2.row.name}, {name}: {paired.median:.2f}× "
                f"{earlier.row.name}"
            )
    best = min(
        (m for m in measured if m.row.kind == "ours" and m.summary() is not None),
        key=lambda m: m.summary().median if lower_is_better else -m.summary().median,  # type: ignore[union-attr]
        default=None,
    )
    peers = [(m.row.name, m.summary()) for m in measured if m.row.kind == "peer"]
    measured_peers = [(n, s) for n, s in peers if s is not None]
    if best is not None and measured_peers:
        value = best.summary()
        assert value is not None
        losing = [
            n
            for n, s in measured_peers
            if (s.median <= value.median if lower_is_better else s.median >= value.median)
        ]
        names = ", ".join(n for n, _ in measured_peers)
        verdict = "met" if not losing else "MISSED"
        detail = f"beaten by {', '.join(losing)}" if losing else f"peers measured: {names}"
        lines.append(f"- {verdict}: {name}, scriptorium ahead of every peer ({detail})")
    return lines


def _verdicts(
    sync: list[calls.Measured] | None,
    aseq: list[calls.Measured] | None,
    aio: list[calls.Measured] | None,
    imported: list[imports.Imported] | None,
) -> list[str]:
    lines: list[str] = []
    if sync:
        lines += _call_verdicts(sync, "sync time per call", 1.0, lower_is_better=True)
    if aseq:
        lines += _call_verdicts(aseq, "async time per call", 1.0, lower_is_better=True)
    if aio:
        lines += _call_verdicts(aio, "async throughput", 1.0, lower_is_better=False)
        on_aiohttp = _find(aio, "floor_aio")
        for row in (m for m in aio if m.row.kind == "ours" and on_aiohttp is not None):
            assert on_aiohttp is not None
            ratio = row.ratio(on_aiohttp)
            if ratio is not None:
                ok = ratio.median >= 1.0
                lines.append(
                    f"- {'met' if ok else 'MISSED'}: {row.row.name}, async throughput ≥ 1.00× "
                    f"the SDK on aiohttp ({ratio.median:.2f}×)"
                )
    by_label = {i.label: i for i in imported or []}
    engine = by_label.get("from scriptorium import Engine")
    took = engine.time() if engine is not None else None
    if took is not None:
        ok = took.median <= 0.100
        lines.append(
            f"- {'met' if ok else 'MISSED'}: from scriptorium import Engine ≤ 100 ms "
            f"({took.median * 1000:.0f} ms)"
        )
    ours = by_label.get("import scriptorium")
    if ours is not None and ours.time() is not None:
        sdks = [m for m in ours.loaded if m in ("anthropic", "openai")]
        what = ", ".join(ours.loaded) or "none of anthropic, openai, jsonschema, jinja2"
        lines.append(
            f"- {'MISSED' if sdks else 'met'}: import scriptorium loads no provider SDK "
            f"(loaded: {what})"
        )
    return lines


def _memory_table(used: list[memory.MemoryUse], concurrency: int) -> str:
    floor = next((u.summary() for u in used if u.row.kind == "floor"), None)
    rows = []
    for item in used:
        value = item.summary()
        ratio = "-"
        if value is not None and floor is not None and floor.median > 0:
            ratio = f"{value.median / floor.median:.2f}"
        rows.append([item.row.name, _cell(value, "{:.1f}"), ratio, item.note or item.row.what])
    header = [
        "row",
        f"KiB per in-flight run (peak RSS delta / {concurrency})",
        "× floor",
        "what / note",
    ]
    return format_table(header, rows)


def _first_table(found: list[firstrun.FirstRun]) -> str:
    rows = []
    for item in found:
        parts = item.summaries()
        if parts is None:
            rows.append([item.label, item.imported, "-", "-", "-", item.note])
            continue
        imported, first, total = parts
        rows.append(
            [
                item.label,
                item.imported,
                imported.show("{:.0f}"),
                first.show("{:.0f}"),
                total.show("{:.0f}"),
                item.note,
            ]
        )
    header = ["row", "import step", "import ms", "first call ms", "total ms", "note"]
    return format_table(header, rows)


def _imports_table(imported: list[imports.Imported]) -> str:
    rows = []
    for item in imported:
        took, rss = item.time(), item.rss()
        ms = None if took is None else Summary(took.median * 1e3, took.low * 1e3, took.high * 1e3)
        loaded = item.note or ", ".join(item.loaded) or "-"
        rows.append([item.label, _cell(ms, "{:.0f}"), _cell(rss, "{:.0f}"), loaded])
    header = [
        "statement",
        "ms",
        "peak RSS MiB (whole process)",
        "of anthropic, openai, jsonschema, jinja2 loaded",
    ]
    return format_table(header, rows)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    sizes = SMOKE if args.smoke else FULL
    if args.blocks:
        sizes = Sizes(
            sizes.sync_calls,
            args.blocks,
            sizes.warmup,
            sizes.async_total,
            sizes.concurrency,
            args.blocks,
            sizes.latency_s,
            sizes.overhead_runs,
            args.blocks,
            args.blocks,
            sizes.memory_repeats,
        )
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - set(SECTIONS)
    if unknown:
        print(f"unknown section(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    keep = {r.strip() for r in args.rows.split(",") if r.strip()}
    rows: list[Row] = [r for r in ROWS if not keep or r.name in keep or r.kind in ("floor", "ours")]
    began = time.perf_counter()
    out: list[str] = [
        "# scriptorium benchmarks",
        "",
        f"command: python -m bench {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip(),
        f"machine: {machine()}",
        "versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()),
        "",
    ]
    print("\n".join(out), flush=True)

    def emit(text: str) -> None:
        out.append(text)
        print(text, flush=True)

    sync = aseq = aio = None
    imported = None
    if "sync" in only:
        with serve(0.0) as url:
            sync = calls.sequential(
                url, rows, calls=sizes.sync_calls, blocks=sizes.sync_blocks, warmup=sizes.warmup
            )
        emit(
            f"## 1. Sequential structured extraction, sync, zero server latency "
            f"({sizes.sync_blocks} blocks × {sizes.sync_calls} calls per row, interleaved)\n"
        )
        emit(_calls_table(sync, "µs per call") + "\n")
    if "aseq" in only:
        with serve(0.0) as url:
            aseq = calls.async_sequential(
                url, rows, calls=sizes.sync_calls, blocks=sizes.sync_blocks, warmup=sizes.warmup
            )
        emit(
            f"## 2. Async, one call at a time, zero server latency "
            f"({sizes.sync_blocks} blocks × {sizes.sync_calls} calls per row, interleaved)\n"
        )
        emit(_calls_table(aseq, "µs per call") + "\n")
    if "async" in only:
        with serve(sizes.latency_s) as url:
            aio = calls.async_throughput(
                url,
                rows,
                total=sizes.async_total,
                concurrency=sizes.concurrency,
                blocks=sizes.async_blocks,
            )
        emit(
            f"## 3. Async throughput: {sizes.concurrency} calls in flight, "
            f"{sizes.latency_s * 1000:.0f} ms server latency "
            f"({sizes.async_blocks} blocks × {sizes.async_total} calls per row)\n"
        )
        emit(_calls_table(aio, "calls/s") + "\n")
    if "memory" in only:
        kinds = ("floor", "ours", "floor2", "ours2")
        with serve(sizes.latency_s) as url:
            used = memory.measure_memory(
                url,
                [r for r in rows if r.kind in kinds],
                concurrency=sizes.concurrency,
                repeats=sizes.memory_repeats,
            )
        emit(
            f"## 4. Memory per in-flight run: {sizes.concurrency} calls in flight, "
            f"{sizes.latency_s * 1000:.0f} ms latency, fresh interpreter each "
            f"({sizes.memory_repeats} repeats)\n"
        )
        emit(_memory_table(used, sizes.concurrency) + "\n")
    if "first" in only:
        with serve(0.0) as url:
            found = firstrun.measure_first_run(url, make_project(url), sizes.import_repeats)
        emit(
            f"## 5. First run: a fresh interpreter's first validated result, imports included "
            f"({sizes.import_repeats} repeats)\n"
        )
        emit(_first_table(found) + "\n")
    if "overhead" in only:
        cases = overhead.CASES if not args.smoke else overhead.CASES[:2]
        table = []
        for case in cases:
            result = overhead.measure_overhead(
                case, runs=sizes.overhead_runs, blocks=sizes.overhead_blocks
            )
            table.append([case.label, result.show("{:.0f}")])
        emit(
            f"## 6. Runner overhead per Engine.run with FakeClient, warm caches "
            f"({sizes.overhead_blocks} blocks × {sizes.overhead_runs} runs)\n"
        )
        emit(format_table(["prompt", "µs per run"], table) + "\n")
    if "imports" in only:
        smoke = {
            "python (nothing imported)",
            "import scriptorium",
            "from scriptorium import Engine",
        }
        labels = smoke if args.smoke else None
        imported = imports.measure_imports(sizes.import_repeats, labels)
        emit(f"## 7. Import cost, fresh interpreter each ({sizes.import_repeats} repeats)\n")
        emit(_imports_table(imported) + "\n")
    emit("## Targets\n")
    emit("\n".join(_verdicts(sync, aseq, aio, imported)) or "- (no section measured a target)")
    emit(f"\n(total {time.perf_counter() - began:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
