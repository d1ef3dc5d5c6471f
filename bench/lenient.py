"""``python -m bench.lenient``: the lenient parser's time against input size (it must be linear).

python -m bench.lenient            # sizes 10k, 40k, 160k characters, 3 repeats (a few minutes)
python -m bench.lenient --smoke    # small sizes, one repeat: proves it still runs (CI)

Each family is a text built to a target size: realistic outputs with one slip repeated through
them, and adversarial texts (deep brackets, many quotes, long runs of commas...). For each size
the table gives the median wall time, the time per character and the work per character the
parser's budget counted. Times are CPU time (``time.process_time``), steadier than wall time on a
shared machine. The last column divides the time per character at the largest size by
the one at the smallest: about 1 means linear (quadratic growth would show 16 between 10k and
160k characters).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bench.stats import format_table, machine
from scriptorium.validate.lenient import recover
from scriptorium.validate.readings import Budget
from scriptorium.validate.tolerant import MAX_DEPTH


@dataclass(frozen=True)
class Family:
    """A way to build a text of about ``n`` characters."""

    name: str
    kind: str  # "realistic" or "adversarial"
    build: Callable[[int], str]


def _records(n: int) -> list[dict[str, object]]:
    record = {"id": 1, "name": "Ada Lovelace", "tags": ["math", "engines"], "active": True}
    return [dict(record, id=i) for i in range(max(1, n // 80))]


def _python_repr(n: int) -> str:
    return repr(_records(n))  # single quotes, True/False/None


def _trailing_commas(n: int) -> str:
    return json.dumps(_records(n), indent=2).replace("\n  }", ",\n  }")


def _prose_and_fence(n: int) -> str:
    body = json.dumps(_records(n), indent=2)
    return f"<thinking>\nDraft: {{'id': 0}}\n</thinking>\nHere it is:\n```json\n{body}\n```\nDone."


def _missing_commas(n: int) -> str:
    return json.dumps(_records(n), indent=2).replace("},\n", "}\n")


def _inner_quotes(n: int) -> str:
    item = '{"q": "she said "hi" twice", "n": 1}'
    return "[" + ", ".join([item] * max(1, n // (len(item) + 2))) + "]"


def _python_tuples(n: int) -> str:
    row = "{'id': %d, 'point': (1.5, -.25), 'size': 1_024, 'ok': True}"
    return "[" + ", ".join(row % i for i in range(max(1, n // 62))) + "]"


def _missing_quotes(n: int) -> str:
    item = '{"city": "Paris, "zip": "75001"}'
    return "[" + ", ".join([item] * max(1, n // (len(item) + 2))) + "]"


FAMILIES = [
    Family("python repr (single quotes, True/None)", "realistic", _python_repr),
    Family("trailing commas, indented", "realistic", _trailing_commas),
    Family("reasoning + prose + fence", "realistic", _prose_and_fence),
    Family("missing commas between objects", "realistic", _missing_commas),
    Family("unescaped inner quotes", "realistic", _inner_quotes),
    Family("python tuples, loose numbers", "realistic", _python_tuples),
    Family("quotes missing before commas", "realistic", _missing_quotes),
    Family("deep brackets [[[[", "adversarial", lambda n: "[" * n),
    Family("wrong closers in groups", "adversarial", lambda n: ("[" * 50 + "}" * 50) * (n // 100)),
    Family("many quotes", "adversarial", lambda n: '"' * n),
    Family('quoted words "a "', "adversarial", lambda n: '"a "' * (n // 4)),
    Family("inner-quote arrays", "adversarial", lambda n: '["a "b", ' * (n // 9)),
    Family('doubled quotes }[""“', "adversarial", lambda n: '}[""“' * (n // 5)),
    Family("comma run [,,,,]", "adversarial", lambda n: "[" + "," * n + "]"),
    Family("numbers a space apart", "adversarial", lambda n: "[" + "1 " * (n // 2) + "]"),
    Family("prose braces {a}", "adversarial", lambda n: "{a} " * (n // 4)),
    Family("stray quotes in items", "adversarial", lambda n: '["a" b", ' * (n // 9)),
    Family('doubled-quote keys {""k"":', "adversarial", lambda n: '{""k"": ' * (n // 8)),
    Family("early closers }, ", "adversarial", lambda n: '{"a": 1}}, "b": ' * (n // 16)),
]


def _measure(text: str, repeats: int) -> tuple[float, int]:
    times = []
    used = 0
    for _ in range(repeats):
        budget = Budget(len(text))
        began = time.process_time()  # CPU time: the parse is single-threaded, the machine shared
        recover(text, schema_check=None, max_depth=MAX_DEPTH, budget=budget)
        times.append(time.process_time() - began)
        used = budget.used
    return statistics.median(times), used


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.lenient", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="small sizes, one repeat (CI)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    sizes = (1_000, 4_000) if args.smoke else (10_000, 40_000, 160_000)
    repeats = 1 if args.smoke else 3
    print("# Lenient parsing: time against input size\n")
    print(f"machine: {machine()}; CPU time, median of {repeats} run(s) per cell\n")
    header = ["family", "kind"]
    for size in sizes:
        header += [
            f"ms @{size // 1000}k",
            f"µs/char @{size // 1000}k",
            f"work/char @{size // 1000}k",
        ]
    header.append("growth of µs/char, largest ÷ smallest")
    rows = []
    for family in FAMILIES:
        cells: list[str] = [family.name, family.kind]
        per_char = []
        for size in sizes:
            text = family.build(size)
            took, used = _measure(text, repeats)
            per_char.append(took * 1e6 / len(text))
            cells += [f"{took * 1e3:.1f}", f"{per_char[-1]:.2f}", f"{used / len(text):.1f}"]
        cells.append(f"{per_char[-1] / per_char[0]:.2f}" if per_char[0] > 0 else "-")
        rows.append(cells)
    print(format_table(header, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
