"""Peak memory of a large PDF through ``prepare`` and a provider adapter, as a multiple of the file.

    python -m bench.media_memory                  # a 20 MB PDF, Anthropic and OpenAI
    python -m bench.media_memory --mb 5 --provider anthropic

For each provider, an Engine over a temporary project runs a prompt whose artifact is the PDF
against a loopback fake server **in a subprocess** (so the server's copy of the upload is not
counted). A warm-up run with a small PDF imports the SDK and opens the connection first. Then
``tracemalloc`` measures the peak of Python allocations over one ``engine.run``: reading the file,
hashing, rendering, the checks, encoding the body and sending it. The number reported is that peak
divided by the file size; the file itself counts 1x, its base64 1.33x.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

from bench.server import serve_process
from scriptorium import Engine
from scriptorium._testing import media

__all__ = ["main", "measure"]

PROMPT = """---
artifacts:
  doc: {media_type: application/pdf, max_bytes: 100000000}
---
## user
Summarise this document in one line.
{{ artifacts.doc.block }}
"""

_SERVER = """
import sys
from scriptorium.testing import FakeAnthropicServer, FakeOpenAIServer
cls = FakeAnthropicServer if sys.argv[1] == "anthropic" else FakeOpenAIServer
with cls(default_text="ok", record=False) as server:
    print(server.url, flush=True)
    sys.stdin.read()
"""


@contextlib.contextmanager
def _server(provider: str) -> Iterator[str]:
    with serve_process(["-c", _SERVER, provider]) as url:
        yield url


def _profile(provider: str, url: str) -> str:
    if provider == "anthropic":
        return f"provider: anthropic\nmodel: claude-sonnet-4-6\nendpoint: {url}\napi_key_env: K\n"
    return f"provider: openai\nmodel: gpt-4.1\nendpoint: {url}\napi_key_env: K\noptions: {{media: [pdf]}}\n"


def measure(provider: str, megabytes: float) -> dict[str, float]:
    """Peak traced memory of one run with a ``megabytes`` PDF, and of ``prepare`` alone."""
    with tempfile.TemporaryDirectory() as tmp, _server(provider) as url:
        root = Path(tmp)
        (root / "prompts").mkdir()
        (root / "profiles").mkdir()
        (root / "prompts" / "read.prompt.md").write_text(PROMPT)
        (root / "profiles" / "p.yaml").write_text(_profile(provider, url))
        (root / "small.pdf").write_bytes(media.pdf(1))
        size = int(megabytes * 1_000_000)
        (root / "big.pdf").write_bytes(media.pdf(1, padding=size))
        file_size = (root / "big.pdf").stat().st_size
        engine = Engine(root, env={"K": "bench-key"})
        engine.run("read", profile="p", artifacts={"doc": "small.pdf"})  # imports, connection

        def peak(call: str) -> tuple[float, float]:
            gc.collect()
            tracemalloc.start()
            started = time.perf_counter()
            if call == "prepare":
                engine.prepare("read", profile="p", artifacts={"doc": "big.pdf"})
            else:
                engine.run("read", profile="p", artifacts={"doc": "big.pdf"})
            elapsed = time.perf_counter() - started
            _, top = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            return top / file_size, elapsed

        prepare_x, prepare_s = peak("prepare")
        run_x, run_s = peak("run")
        return {
            "file_mb": file_size / 1_000_000,
            "prepare_x": prepare_x,
            "prepare_s": prepare_s,
            "run_x": run_x,
            "run_s": run_s,
        }


def main(argv: list[str] | None = None) -> int:
    """Print one table row per provider; exit 1 when a run passes the 3x target."""
    parser = argparse.ArgumentParser(prog="python -m bench.media_memory")
    parser.add_argument("--mb", type=float, default=20.0, help="PDF size in MB (default 20)")
    parser.add_argument(
        "--provider", choices=("anthropic", "openai", "both"), default="both", help="adapter"
    )
    args = parser.parse_args(argv)
    providers = ("anthropic", "openai") if args.provider == "both" else (args.provider,)
    print("| adapter | PDF | peak, prepare | peak, prepare + call | time, prepare + call |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for provider in providers:
        row = measure(provider, args.mb)
        worst = max(worst, row["run_x"])
        print(
            f"| {provider} | {row['file_mb']:.1f} MB | {row['prepare_x']:.2f}x | "
            f"{row['run_x']:.2f}x | {row['run_s']:.2f} s |"
        )
    print(f"\ntarget: peak under 3x the file size; worst {worst:.2f}x")
    return 0 if worst < 3.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
