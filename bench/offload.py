"""``python -m bench.offload``: what leaving the event loop costs an async run, and what staying
on it costs everyone else, to set the thresholds of ``scriptorium.usecase.offload``.

python -m bench.offload            # 2,000 small runs per row, texts up to 64k characters
python -m bench.offload --smoke    # a few of each: proves it still runs (CI)

Two tables. **Small runs**: ``Runner.arun`` over ``FakeClient`` (prepare, render, validate, the
result: scriptorium alone) as it is, where a small run stays on the loop, and with every step
forced through ``asyncio.to_thread``; the difference is what a thread hop would add to every run.
**Judging a text**: how long the loop would be held judging outputs of growing length, valid JSON
(the strict path) and a hostile text a lenient reading must work through; the validator's
``OFFLOAD_CHARS`` sits where the hostile text starts to hold the loop for a few milliseconds while
a thread hop still costs a small part of that.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Sequence

from bench.stats import format_table, machine
from scriptorium.testing import (
    FakeClient,
    FixedClock,
    MemoryArtifactReader,
    MemoryProfileRepository,
    MemoryPromptRepository,
    SequentialIds,
)
from scriptorium.usecase import Runner, RunRequest
from scriptorium.validate.model import OutputContract
from scriptorium.validate.schema import SchemaValidator
from scriptorium.validate.validator import OFFLOAD_CHARS

PROMPT = """---
profile: p
inputs: {type: object, required: [name], properties: {name: {type: string}}}
output:
  format: json_schema
  schema: {type: object, required: [greeting], properties: {greeting: {type: string}}}
---
Greet {{ name }} in JSON.
"""
ANSWER = '{"greeting": "Hello, Ada!"}'


def _runner(runs: int) -> Runner:
    from scriptorium.prompt.jinja import JinjaRenderer

    return Runner(
        prompts=MemoryPromptRepository({"greet": PROMPT}),
        profiles=MemoryProfileRepository({"p": {"provider": "fake", "model": "m"}}),
        artifacts=MemoryArtifactReader({}),
        renderer=JinjaRenderer(),
        client=FakeClient([ANSWER] * (runs + 10)),
        validator=SchemaValidator(),
        env={},
        clock=FixedClock(),
        new_id=SequentialIds(),
    )


async def _small_runs(runs: int, hop: bool) -> float:
    """Microseconds per ``arun`` (``hop``: one extra thread hop per step, as a heavy run takes)."""
    runner = _runner(runs)
    request = RunRequest(prompt_id="greet", inputs={"name": "Ada"})
    for _ in range(5):
        await runner.arun(request)
    started = time.perf_counter()
    for _ in range(runs):
        if hop:
            await asyncio.to_thread(lambda: None)  # the prepare step's hop
            await asyncio.to_thread(lambda: None)  # the judgement's hop
        await runner.arun(request)
    return (time.perf_counter() - started) / runs * 1e6


def _judging(sizes: Sequence[int]) -> list[list[str]]:
    validator = SchemaValidator()
    contract = OutputContract(format="json")
    rows = []
    for size in sizes:
        valid = json.dumps({"text": "x" * size})
        hostile = ("{a: 1} " * (size // 7 + 1))[:size]
        cells = [f"{size:,}"]
        for text in (valid, hostile):
            times = []
            for _ in range(3):
                started = time.process_time()
                validator.validate(text, contract)
                times.append(time.process_time() - started)
            cells.append(f"{statistics.median(times) * 1000:.2f} ms")
        rows.append(cells)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.offload")
    parser.add_argument("--smoke", action="store_true", help="a few of each")
    args = parser.parse_args(argv)
    runs = 20 if args.smoke else 2000
    sizes = (1_000, OFFLOAD_CHARS) if args.smoke else (1_000, 4_000, OFFLOAD_CHARS, 32_000, 64_000)
    inline = asyncio.run(_small_runs(runs, hop=False))
    hopped = asyncio.run(_small_runs(runs, hop=True))
    print(f"# Leaving the event loop ({machine()})\n")
    print("## Small runs (arun over FakeClient)\n")
    print(
        format_table(
            ["row", "per run"],
            [
                ["on the loop (as small runs are)", f"{inline:.1f} us"],
                ["two thread hops added (as a heavy run takes)", f"{hopped:.1f} us"],
                ["what the hops cost", f"{hopped - inline:.1f} us ({hopped / inline:.2f}x)"],
            ],
        )
    )
    print(f"\n## Judging a text (the loop held that long; OFFLOAD_CHARS = {OFFLOAD_CHARS:,})\n")
    print(format_table(["characters", "valid JSON", "hostile, lenient"], _judging(sizes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
