"""First-run cost: a fresh interpreter's time to its first validated result, imports included,
for the floor and for scriptorium (``from scriptorium import Engine``, ``Engine(...)``, the first
``engine.run``, which imports the SDK), split into import time and first-call time.

    python -m bench.firstrun KIND URL PROJECT     # the child; prints one JSON line
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.stats import Summary, summarize

__all__ = ["KINDS", "FirstRun", "measure_first_run"]

#: (kind, label, what the import step is)
KINDS: tuple[tuple[str, str, str], ...] = (
    ("floor", "bare anthropic SDK (floor)", "import anthropic, jsonschema"),
    ("native", "scriptorium, native", "from scriptorium import Engine"),
    ("prompt", "scriptorium, prompt", "from scriptorium import Engine"),
)


@dataclass
class FirstRun:
    """Milliseconds to import, and from there to the first validated result, per repeat."""

    kind: str
    label: str
    imported: str
    import_ms: list[float] = field(default_factory=list)
    first_ms: list[float] = field(default_factory=list)
    note: str = ""

    def summaries(self) -> tuple[Summary, Summary, Summary] | None:
        if not self.import_ms:
            return None
        total = [a + b for a, b in zip(self.import_ms, self.first_ms, strict=True)]
        return summarize(self.import_ms), summarize(self.first_ms), summarize(total)


def _child(kind: str, url: str, project: str) -> dict[str, float]:
    started = time.perf_counter()
    if kind == "floor":
        import anthropic
        import jsonschema

        from bench.task import (
            API_KEY,
            PERSON_MAX_TOKENS,
            PERSON_MODEL,
            PERSON_SCHEMA,
            PERSON_SYSTEM,
            SENTENCE,
        )

        imported = time.perf_counter()
        client = anthropic.Anthropic(api_key=API_KEY, base_url=url, max_retries=0)
        message: Any = client.messages.create(
            model=PERSON_MODEL,
            max_tokens=PERSON_MAX_TOKENS,
            system=PERSON_SYSTEM,
            messages=[{"role": "user", "content": SENTENCE}],
        )
        value = json.loads(message.content[0].text)
        ok = jsonschema.Draft202012Validator(PERSON_SCHEMA).is_valid(value)
    else:
        from scriptorium import Engine

        imported = time.perf_counter()
        from bench.task import API_KEY, KEY_ENV, SENTENCE

        engine = Engine(project, env={KEY_ENV: API_KEY})
        prompt_id = "person" if kind == "native" else "person-prompt"
        ok = engine.run(prompt_id, inputs={"sentence": SENTENCE}).validation.valid
    done = time.perf_counter()
    if not ok:
        raise AssertionError("the first result came back invalid")
    return {"import_s": imported - started, "first_s": done - imported}


def measure_first_run(url: str, project: Path, repeats: int) -> list[FirstRun]:
    """Each kind ``repeats`` times, interleaved, every one in a new interpreter."""
    rows = [FirstRun(kind, label, imported) for kind, label, imported in KINDS]
    for _ in range(repeats):
        for row in rows:
            if row.note:
                continue
            done = subprocess.run(
                [sys.executable, "-m", "bench.firstrun", row.kind, url, str(project)],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            if done.returncode != 0:
                row.note = "failed: " + (done.stderr.strip().splitlines() or ["?"])[-1][:160]
                continue
            found = json.loads(done.stdout.strip().splitlines()[-1])
            row.import_ms.append(float(found["import_s"]) * 1e3)
            row.first_ms.append(float(found["first_s"]) * 1e3)
    return rows


if __name__ == "__main__":
    print(json.dumps(_child(sys.argv[1], sys.argv[2], sys.argv[3])))
