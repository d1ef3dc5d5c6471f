"""Row 4: ``import X`` wall time and the process's peak RSS, each in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

from bench.stats import Summary, summarize

__all__ = ["IMPORTS", "Imported", "measure_imports"]

#: (label, the statement timed)
IMPORTS: tuple[tuple[str, str], ...] = (
    ("python (nothing imported)", "pass"),
    ("import scriptorium", "import scriptorium"),
    ("from scriptorium import Engine", "from scriptorium import Engine"),
    ("import anthropic", "import anthropic"),
    ("import instructor", "import instructor"),
    ("import pydantic_ai", "import pydantic_ai"),
    ("import langchain_anthropic", "import langchain_anthropic"),
)

_PROBE = """
import json, resource, sys, time
start = time.perf_counter()
{statement}
took = time.perf_counter() - start
sdks = sorted(m for m in ("anthropic", "openai", "jsonschema", "jinja2") if m in sys.modules)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:  # ru_maxrss survives exec on Linux (it would be the parent's peak): VmHWM does not
    with open("/proc/self/status") as status:
        rss = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
except (OSError, StopIteration, ValueError):
    pass
print(json.dumps({{"s": took, "rss_kib": rss, "loaded": sdks}}))
"""


@dataclass
class Imported:
    """One statement's timings (seconds) and peak RSS (MiB), or why it could not run."""

    label: str
    seconds: list[float] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)
    loaded: list[str] = field(default_factory=list)
    note: str = ""

    def time(self) -> Summary | None:
        return summarize(self.seconds) if self.seconds else None

    def rss(self) -> Summary | None:
        return summarize(self.rss_mib) if self.rss_mib else None


def _probe(statement: str) -> dict[str, object]:
    # Bytecode is written and used, as in an installed package (a PYTHONDONTWRITEBYTECODE
    # environment would otherwise recompile every edited module on each import).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(statement=statement)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise RuntimeError(last[:120])
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure_imports(repeats: int, labels: set[str] | None = None) -> list[Imported]:
    """Each statement ``repeats`` times, interleaved, every one in a new interpreter."""
    rows = [Imported(label) for label, _ in IMPORTS if labels is None or label in labels]
    statements = dict(IMPORTS)
    for row in rows:  # untimed: writes any missing bytecode and warms the file cache
        try:
            _probe(statements[row.label])
        except RuntimeError:
            pass
    for _ in range(repeats):
        for row in rows:
            if row.note:
                continue
            try:
                found = _probe(statements[row.label])
            except RuntimeError as err:
                row.note = f"cannot import: {err}"
                continue
            row.seconds.append(float(found["s"]))  # type: ignore[arg-type]
            row.rss_mib.append(float(found["rss_kib"]) / 1024)  # type: ignore[arg-type]
            row.loaded = list(found["loaded"])  # type: ignore[call-overload]
    return rows
