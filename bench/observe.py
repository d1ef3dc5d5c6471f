"""``python -m bench.observe``: what observability costs per run.

Rows, each ``Engine.run`` of the small overhead prompt with ``FakeClient`` (so only scriptorium
is measured), interleaved in blocks:
- off: no observer (the default);
- on, API no-op: ``OTelObserver`` over OpenTelemetry's no-op tracer and meter providers (what an
  application gets that installed ``opentelemetry-api`` and configured nothing);
- on, SDK: ``OTelObserver`` over the SDK's providers with a span processor that drops spans (the
  SDK's own work: span objects, attributes, metric aggregation), no exporter I/O.

The cost of the off path itself is too small to see next to a run, so it is also timed on its own:
the one attribute check plus the cached level check that decides whether log records need the run
scope, in a tight loop, less the cost of an empty function call.
"""

from __future__ import annotations

import argparse
import time
import timeit
from collections.abc import Callable, Sequence
from typing import Any

from bench.overhead import CASES, _project
from bench.stats import Summary, summarize

__all__ = ["main", "measure"]


def _engines() -> dict[str, Callable[[], Any]]:
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.trace import NoOpTracerProvider

    from scriptorium import Engine
    from scriptorium.llm.model import LLMResponse, Usage
    from scriptorium.observe import OTelObserver
    from scriptorium.testing import FakeClient

    class Drop(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    root, refs, output = _project(CASES[0])
    sdk_tracer = TracerProvider()
    sdk_tracer.add_span_processor(SimpleSpanProcessor(Drop()))
    observers: dict[str, Any] = {
        "off (no observer)": None,
        "on, API no-op providers": OTelObserver(
            tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider()
        ),
        "on, SDK providers, spans dropped": OTelObserver(
            tracer_provider=sdk_tracer, meter_provider=MeterProvider()
        ),
    }
    runs: dict[str, Callable[[], Any]] = {}
    for label, observer in observers.items():
        client = FakeClient([LLMResponse(text=output, model="fake", usage=Usage())])
        engine = Engine(root, client=client, observer=observer)

        def run(engine: Any = engine, client: Any = client) -> Any:
            client.requests.clear()
            return engine.run("bench", inputs={"audience": "the board"}, artifacts=refs)

        runs[label] = run
    return runs


def _off_path_ns(loops: int) -> float:
    """Nanoseconds for what a run without an observer spends on observability."""
    from scriptorium.observe import scope

    class Holder:
        _observer = None

    holder = Holder()

    def step() -> None:
        if holder._observer is not None:
            raise AssertionError
        token = scope.enter_for_logs("run", "prompt", "sha256:0")
        if token is not None:
            scope.leave(token)

    def empty() -> None:
        return None

    best = min(timeit.repeat(step, number=loops, repeat=5))
    call = min(timeit.repeat(empty, number=loops, repeat=5))
    return max(0.0, best - call) / loops * 1e9


def measure(runs: int, blocks: int) -> tuple[dict[str, Summary], float]:
    """Microseconds per run for each row (median over blocks), and the off path in ns."""
    rows = _engines()
    for run in rows.values():
        for _ in range(20):
            run()
    samples: dict[str, list[float]] = {label: [] for label in rows}
    labels = list(rows)
    for block in range(blocks):
        order = labels[block % len(labels) :] + labels[: block % len(labels)]
        for label in order:
            run = rows[label]
            start = time.perf_counter()
            for _ in range(runs):
                run()
            samples[label].append((time.perf_counter() - start) / runs * 1e6)
    return {label: summarize(values) for label, values in samples.items()}, _off_path_ns(
        max(runs * 100, 1000)
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.observe", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="a few runs (CI)")
    args = parser.parse_args(argv)
    runs, blocks = (5, 1) if args.smoke else (300, 7)
    table, off_ns = measure(runs, blocks)
    base = table["off (no observer)"].median
    print("| observability | µs/run (median, min-max) | vs off |")
    print("|---|---|---|")
    for label, summary in table.items():
        print(f"| {label} | {summary.show('{:.1f}')} | {summary.median / base:.2f}x |")
    print()
    print(
        f"Off path alone (the observer check and the logging check): {off_ns:.0f} ns per run "
        "(a Python function call subtracted)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
