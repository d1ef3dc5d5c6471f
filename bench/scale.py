"""Batches at scale: ``scriptorium batch`` against a plain asyncio loop over the SDK, on the same
input file and the same loopback server, each in a process of its own (so each has its own peak
RSS, read from the kernel's accounting of that child: ``wait4``'s ``ru_maxrss``).

- **scriptorium**: ``python -m scriptorium batch person --in IN --out OUT --concurrency C`` (the
  person task of :mod:`bench.task`, strategy ``native``): every line read, prepared, run,
  validated, journaled and written in input order, the way a user runs it.
- **plain loop**: the same lines read one at a time by ``C`` asyncio workers sharing one
  ``AsyncAnthropic(max_retries=0)``: ``messages.create``, ``json.loads``, a compiled
  ``Draft202012Validator.is_valid``, one JSON line written per result (in the order they finish).
  What someone would write by hand, holding no more than it has in flight.

Each line's sentence differs (so no two rows share a request hash). Rows/s is lines over the
child's wall time (start-up included, the same for both: about 0.3-0.5 s); the ratio is
scriptorium's rows/s over the plain loop's from the same size and latency, the two run back to
back.

    python -m bench.scale                          # 1k / 10k / 100k at 0 and 5 ms
    python -m bench.scale --sizes 1000,10000 --latencies 0.005
    python -m bench.scale --smoke                  # 200 rows, 0 ms: that it runs
    python -m bench.scale --plain URL IN OUT C      # the plain loop's child (internal)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.server import serve
from bench.task import (
    API_KEY,
    KEY_ENV,
    PERSON_MAX_TOKENS,
    PERSON_MODEL,
    PERSON_SCHEMA,
    PERSON_SYSTEM,
    make_project,
)

__all__ = ["Measured", "main", "measure"]

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Measured:
    """One child's run: rows, wall seconds, peak RSS (MiB) and its exit status."""

    rows: int
    seconds: float
    peak_mib: float
    code: int

    @property
    def rate(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0


def _write_input(path: Path, rows: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(rows):
            sentence = f"Ada Lovelace, row {i}, was a mathematician and writer aged 36."
            handle.write(json.dumps({"id": i, "inputs": {"sentence": sentence}}) + "\n")


def _child(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """Run ``argv``; its wall seconds, peak RSS in MiB (its own, from ``wait4``) and status."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0,):
        sys.stderr.write(err.decode("utf-8", "replace")[-2000:])
    return seconds, usage.ru_maxrss / 1024, proc.returncode


def measure(url: str, rows: int, concurrency: int, work: Path) -> tuple[Measured, Measured]:
    """scriptorium's batch and the plain loop over ``rows`` lines; (scriptorium, plain)."""
    project = make_project(url, work / "project")
    source = work / f"in-{rows}.jsonl"
    _write_input(source, rows)
    env = {**os.environ, KEY_ENV: API_KEY, "PYTHONPATH": str(REPO)}
    out = work / "out.jsonl"
    for stale in (out, work / "out.jsonl.partial", work / "plain.jsonl"):
        stale.unlink(missing_ok=True)
    ours = _child(
        [
            sys.executable,
            "-m",
            "scriptorium",
            "batch",
            "person",
            "--in",
            str(source),
            "--out",
            str(out),
            "--concurrency",
            str(concurrency),
        ],
        project,
        env,
    )
    plain = _child(
        [
            sys.executable,
            "-m",
            "bench.scale",
            "--plain",
            url,
            str(source),
            str(work / "plain.jsonl"),
            str(concurrency),
        ],
        REPO,
        env,
    )
    return Measured(rows, *ours), Measured(rows, *plain)


async def _plain(url: str, source: str, out: str, concurrency: int) -> None:
    import anthropic
    import jsonschema

    client = anthropic.AsyncAnthropic(api_key=API_KEY, base_url=url, max_retries=0)
    validator = jsonschema.Draft202012Validator(PERSON_SCHEMA)
    with open(source, encoding="utf-8") as lines, open(out, "w", encoding="utf-8") as sink:

        async def worker() -> None:
            for line in lines:  # shared: each line is taken by one worker
                row = json.loads(line)
                message = await client.messages.create(
                    model=PERSON_MODEL,
                    max_tokens=PERSON_MAX_TOKENS,
                    system=PERSON_SYSTEM,
                    messages=[{"role": "user", "content": row["inputs"]["sentence"]}],
                )
                value = json.loads(message.content[0].text)  # type: ignore[union-attr]
                sink.write(
                    json.dumps({"id": row["id"], "valid": validator.is_valid(value), "v": value})
                    + "\n"
                )

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    await client.close()


def _table(results: list[tuple[float, Measured, Measured]], concurrency: int) -> str:
    lines = [
        f"| rows | latency | scriptorium rows/s | plain loop rows/s | ratio | scriptorium peak "
        f"RSS | plain peak RSS | (concurrency {concurrency}) |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for latency, ours, plain in results:
        ok = "" if ours.code in (0,) and plain.code == 0 else f"exit {ours.code}/{plain.code}"
        lines.append(
            f"| {ours.rows:,} | {latency * 1000:g} ms | {ours.rate:,.0f} | {plain.rate:,.0f} | "
            f"{ours.rate / plain.rate if plain.rate else 0:.2f}x | {ours.peak_mib:.0f} MiB | "
            f"{plain.peak_mib:.0f} MiB | {ok} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--latencies", default="0,0.005")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--plain", nargs=4, metavar=("URL", "IN", "OUT", "C"))
    args = parser.parse_args(argv)
    if args.plain:
        url, source, out, concurrency = args.plain
        asyncio.run(_plain(url, source, out, int(concurrency)))
        return
    sizes = [200] if args.smoke else [int(s) for s in args.sizes.split(",")]
    latencies = [0.0] if args.smoke else [float(s) for s in args.latencies.split(",")]
    results: list[tuple[float, Measured, Measured]] = []
    with tempfile.TemporaryDirectory(prefix="scriptorium-scale-") as temp:
        for latency in latencies:
            with serve(latency) as url:
                for rows in sizes:
                    ours, plain = measure(url, rows, args.concurrency, Path(temp))
                    results.append((latency, ours, plain))
                    print(_table(results[-1:], args.concurrency).splitlines()[-1], flush=True)
    print()
    print(_table(results, args.concurrency))


if __name__ == "__main__":
    main()
