"""``python -m bench.stream``: streaming, side by side with the bare ``anthropic`` SDK.

python -m bench.stream            # the full run (about a minute)
python -m bench.stream --smoke    # a few streams per row (CI)

Three tables:

1. **Time to first token** over a paced stream (the loopback server waits ``--pace`` before each of
   ``--chunks`` text deltas): from the start of the call to the bare SDK's first
   ``content_block_delta`` event, and to scriptorium's first ``TextDelta`` from ``engine.stream``
   (which also prepares the run: load, render, hashes). The difference is what scriptorium adds
   before the first text reaches the caller.
2. **Client CPU per streamed run** (``time.process_time``, the server runs in another process):
   the bare SDK reading the stream and ``json.loads`` + a compiled validator at the end, against
   ``engine.stream`` (events, partial values, validation, result).
3. **Partial parsing cost**: :class:`scriptorium.validate.json.partial.PartialJSON` fed outputs of
   growing size in 4-character chunks: characters re-parsed per output character and µs per KiB
   stay flat as the output grows (linear cost), where re-parsing every chunk would grow with it.

The rows alternate stream by stream (each round starts with the other row), so both see the same
moments of a shared machine; each figure is the median over blocks of per-block medians (CPU: of
per-block means), with min-max.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from bench.server import serve_process
from bench.stats import Summary, format_table, machine, summarize
from bench.task import (
    API_KEY,
    DOCUMENT,
    INSTANCE,
    KEY_ENV,
    MODEL,
    SCHEMA,
    make_project,
    user_message,
)
from scriptorium._testing.anthropic_server import _message_body, _sse_message
from scriptorium._testing.http import Answer, RecordedRequest
from scriptorium.testing import FakeAnthropicServer

__all__ = ["main"]

_USAGE = {"input_tokens": 412, "output_tokens": 187}
_API_SCHEMA = {k: v for k, v in SCHEMA.items() if k != "$schema"}


# --- the paced server (runs in a subprocess) ------------------------------------------------------


class PacedServer(FakeAnthropicServer):
    """Answers every streaming request with the extraction as text deltas, ``pace_s`` apart."""

    def __init__(self, *, pace_s: float, chunks: int) -> None:
        super().__init__(record=False)
        text = json.dumps(INSTANCE)
        size = -(-len(text) // chunks)
        self._pieces = [text[i : i + size] for i in range(0, len(text), size)]
        self._pace_s = pace_s
        self._text = text

    def default_answer(self, request: RecordedRequest) -> Answer:
        """The extraction, streamed in paced chunks (or whole, to a request that does not stream)."""
        content = [{"type": "text", "text": self._text}]
        body = _message_body(request, content, "end_turn", _USAGE, None, "msg_bench")
        if isinstance(request.body, dict) and request.body.get("stream") is True:
            return _sse_message(body, self._pieces, self._pace_s)
        return Answer.json(body)


@contextlib.contextmanager
def serve(pace_s: float, chunks: int) -> Iterator[str]:
    """Run :class:`PacedServer` in a subprocess; yields its base URL."""
    argv = ["-m", "bench.stream", "--serve", "--pace", str(pace_s), "--chunks", str(chunks)]
    with serve_process(argv) as url:
        yield url


# --- the two rows ---------------------------------------------------------------------------------

#: One streamed run: returns seconds from the start of the call to the first text.
Streamed = Callable[[], float]


def bare_sdk(url: str) -> Streamed:
    """The bare SDK: ``messages.create(stream=True)``, text deltas joined, validated at the end."""
    import anthropic
    import jsonschema

    client: Any = anthropic.Anthropic(api_key=API_KEY, base_url=url, max_retries=0)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    messages = [{"role": "user", "content": user_message()}]
    output_config = {"format": {"type": "json_schema", "schema": _API_SCHEMA}}

    def call() -> float:
        start = time.perf_counter()
        first = 0.0
        parts: list[str] = []
        events = client.messages.create(
            model=MODEL,
            max_tokens=1024,
            messages=messages,
            output_config=output_config,
            stream=True,
        )
        with events:
            for event in events:
                if event.type == "content_block_delta" and event.delta.type == "text_delta":
                    if not parts:
                        first = time.perf_counter() - start
                    parts.append(event.delta.text)
        value = json.loads("".join(parts))
        if not validator.is_valid(value):
            raise AssertionError("invalid extraction")
        return first

    return call


def scriptorium_stream(url: str) -> Streamed:
    """``engine.stream``: events (deltas, partial values), validation and the result."""
    from scriptorium import Engine, TextDelta

    engine = Engine(make_project(url), env={KEY_ENV: API_KEY})
    inputs = {"document": DOCUMENT}

    def call() -> float:
        start = time.perf_counter()
        first = 0.0
        with engine.stream("extract", inputs=inputs) as stream:
            for event in stream:
                if not first and isinstance(event, TextDelta):
                    first = time.perf_counter() - start
            result = stream.result()
        if not result.validation.valid:
            raise AssertionError("invalid extraction")
        return first

    return call


@dataclass
class Measured:
    """Per block: the median time to first text and the client CPU per run (µs)."""

    name: str
    ttft_us: list[float]
    cpu_us: list[float]


def measure(url: str, runs: int, blocks: int, warmup: int) -> list[Measured]:
    """``blocks`` blocks of ``runs`` rounds; each round streams once per row, alternating which
    row goes first, so both rows see the same moment of a shared machine. Per block, the median
    time to first text and the mean client CPU per run of each row."""
    rows = [
        ("bare anthropic SDK stream", bare_sdk(url)),
        ("scriptorium engine.stream", scriptorium_stream(url)),
    ]
    results = [Measured(name, [], []) for name, _ in rows]
    for _name, call in rows:
        for _ in range(warmup):
            call()
    gc.collect()
    gc.freeze()
    for _block in range(blocks):
        firsts: list[list[float]] = [[] for _ in rows]
        cpu = [0.0 for _ in rows]
        for round_ in range(runs):
            order = range(len(rows)) if round_ % 2 == 0 else reversed(range(len(rows)))
            for index in order:
                began = time.process_time()
                firsts[index].append(rows[index][1]())
                cpu[index] += time.process_time() - began
        for index, measured in enumerate(results):
            measured.ttft_us.append(statistics.median(firsts[index]) * 1e6)
            measured.cpu_us.append(cpu[index] / runs * 1e6)
    gc.unfreeze()
    return results


def _paired(ours: list[float], floor: list[float], fn: Callable[[float, float], float]) -> Summary:
    return summarize([fn(a, b) for a, b in zip(ours, floor, strict=True)])


# --- partial parsing ------------------------------------------------------------------------------


def partial_cost(sizes: Sequence[int], repeats: int) -> list[list[str]]:
    """Rows of table 3: output size, re-parsed characters per character, µs per KiB, partials."""
    from scriptorium.validate.json.partial import PartialJSON

    rows = []
    item = {"description": "Ergonomic office chair, black", "quantity": 3, "unit_price": 289.0}
    for size in sizes:
        items = max(1, size // len(json.dumps(item)))
        text = json.dumps({"invoice_number": "INV-1", "line_items": [item] * items})
        chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
        timings = []
        parser = PartialJSON()
        changes = 0
        for _ in range(repeats):
            parser = PartialJSON()
            changes = 0
            start = time.perf_counter()
            for chunk in chunks:
                changes += parser.feed(chunk)
            changes += parser.finish()
            timings.append(time.perf_counter() - start)
        if parser.value != json.loads(text):
            raise AssertionError("the partial parser did not end at the value")
        per_kib = statistics.median(timings) / (len(text) / 1024) * 1e6
        rows.append(
            [
                f"{len(text):,}",
                f"{len(chunks):,}",
                f"{parser.parses:,}",
                f"{parser.parsed_bytes / len(text):.1f}",
                f"{per_kib:.0f}",
                f"{changes:,}",
            ]
        )
    return rows


# --- the report -----------------------------------------------------------------------------------


def report(
    pace_s: float, chunks: int, runs: int, blocks: int, warmup: int, sizes: Sequence[int]
) -> str:
    """Run everything; the Markdown report."""
    with serve(pace_s, chunks) as url:
        measured = measure(url, runs, blocks, warmup)
    floor, ours = measured
    lines = [
        "# Streaming benchmark",
        "",
        machine(),
        "",
        f"Paced stream: {chunks} text deltas of the ~700-byte extraction, {pace_s * 1000:.1f} ms "
        f"before each; {blocks} interleaved blocks of {runs} streams per row.",
        "",
        "## 1. Time to first token",
        "",
    ]
    ttft_rows = [[m.name, summarize(m.ttft_us).show("{:.0f}")] for m in measured]
    ttft_rows.append(
        [
            "difference (scriptorium - bare), µs",
            _paired(ours.ttft_us, floor.ttft_us, lambda a, b: a - b).show("{:.0f}"),
        ]
    )
    ttft_rows.append(
        [
            "ratio (scriptorium / bare), target <= 1.02",
            _paired(ours.ttft_us, floor.ttft_us, lambda a, b: a / b).show("{:.3f}"),
        ]
    )
    lines.append(format_table(["row", "µs from call to first text"], ttft_rows))
    lines += ["", "## 2. Client CPU per streamed run", ""]
    cpu_rows = [[m.name, summarize(m.cpu_us).show("{:.0f}")] for m in measured]
    cpu_rows.append(
        [
            "ratio (scriptorium / bare)",
            _paired(ours.cpu_us, floor.cpu_us, lambda a, b: a / b).show("{:.2f}"),
        ]
    )
    lines.append(format_table(["row", "client CPU µs per run"], cpu_rows))
    lines += ["", "## 3. Partial values: parsing cost against output size (4-character chunks)", ""]
    header = [
        "output chars",
        "chunks",
        "re-parses",
        "chars parsed per char",
        "µs per KiB",
        "partials",
    ]
    lines.append(format_table(header, partial_cost(sizes, repeats=3)))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """The command line (see the module doc)."""
    parser = argparse.ArgumentParser(prog="python -m bench.stream")
    parser.add_argument("--smoke", action="store_true", help="a few streams per row (CI)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--pace", type=float, default=0.002, help="seconds before each delta")
    parser.add_argument("--chunks", type=int, default=20, help="text deltas per stream")
    args = parser.parse_args(argv)
    if args.serve:
        with PacedServer(pace_s=args.pace, chunks=args.chunks) as server:
            print(server.url, flush=True)
            sys.stdin.read()
        return
    if args.smoke:
        print(report(args.pace, args.chunks, runs=2, blocks=1, warmup=1, sizes=(1_000, 10_000)))
    else:
        print(
            report(
                args.pace,
                args.chunks,
                runs=20,
                blocks=7,
                warmup=5,
                sizes=(1_000, 10_000, 100_000, 1_000_000),
            )
        )


if __name__ == "__main__":
    main()
