"""``python -m bench.lenient``: the lenient parser's time against input size (it must be linear).

python -m bench.lenient            # sizes 10k, 40k, 160k characters, 3 repeats (a few minutes)
python -m bench.lenient --smoke    # small sizes, one repeat: proves it still runs (CI)
python -m bench.lenient --corpora  # recall and wrong values on tests/validate/json/corpora, beside
                                   # json_repair's (when installed; not a dependency)

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
from pathlib import Path

from bench.stats import format_table, machine
from scriptorium.validate.json.lenient import recover
from scriptorium.validate.json.readings import Budget
from scriptorium.validate.json.tolerant.cursor import MAX_DEPTH


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


def _fourth_round(n: int) -> str:
    # Comments beside colons, missing colons, joins over lines, paths, dates without quotes.
    item = '{"path" /* c */: "C:\\Users\\x", "at": 2024-01-01T10:00:00Z, "s" "a" +\n "b"}'
    return "[" + ",\n".join([item] * max(1, n // (len(item) + 2))) + "]"


FAMILIES = [
    Family("python repr (single quotes, True/None)", "realistic", _python_repr),
    Family("trailing commas, indented", "realistic", _trailing_commas),
    Family("reasoning + prose + fence", "realistic", _prose_and_fence),
    Family("missing commas between objects", "realistic", _missing_commas),
    Family("unescaped inner quotes", "realistic", _inner_quotes),
    Family("python tuples, loose numbers", "realistic", _python_tuples),
    Family("quotes missing before commas", "realistic", _missing_quotes),
    Family("comments at colons, joins, paths, dates", "realistic", _fourth_round),
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
    Family('joins in open strings ["a + "', "adversarial", lambda n: '["a + "b, ' * (n // 10)),
    Family("comments after quotes in keys", "adversarial", lambda n: "{'a' /* c */ " * (n // 13)),
    Family("backslashes in strings", "adversarial", lambda n: '["\\q\\' * (n // 6)),
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
    parser.add_argument(
        "--corpora", action="store_true", help="other projects' cases: ours beside json_repair"
    )
    return parser.parse_args(argv)


def _same(left: object, right: object) -> bool:
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


def _json_repair() -> Callable[[str], tuple[bool, object]] | None:
    try:
        import json_repair  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        return None

    def read(text: str) -> tuple[bool, object]:
        try:
            value = json_repair.loads(text)
        except Exception:  # any failure of the other tool is "no value"
            return False, None
        # json_repair answers "" when it finds nothing: no value.
        return value != "", value

    return read


def corpora() -> int:
    """Per corpus and reader: clear cases recovered, wrong values on clear cases, values given
    where a refusal is due."""
    from scriptorium.validate.json.strict import parse_lenient

    def ours(text: str) -> tuple[bool, object]:
        outcome = parse_lenient(text)
        return outcome.ok, outcome.value

    readers: dict[str, Callable[[str], tuple[bool, object]]] = {"scriptorium": ours}
    other = _json_repair()
    if other is not None:
        import importlib.metadata

        readers[f"json_repair {importlib.metadata.version('json_repair')}"] = other
    root = Path(__file__).resolve().parents[1] / "tests" / "validate" / "corpora"
    header = ["corpus", "reader", "clear", "recovered", "wrong (clear)", "value where refusal due"]
    rows = []
    for path in sorted(root.glob("*.json")):
        cases = json.loads(path.read_text("utf-8"))["cases"]
        for name, read in readers.items():
            clear = recovered = wrong = overreach = 0
            for case in cases:
                ok, value = read(case["input"])
                if case["label"] == "clear":
                    clear += 1
                    if ok and _same(value, case["expected"]):
                        recovered += 1
                    elif ok:
                        wrong += 1
                elif case["label"] == "refuse" and ok:
                    overreach += 1
            share = f"{recovered} ({100 * recovered / clear:.1f} %)" if clear else "-"
            rows.append([path.stem, name, str(clear), share, str(wrong), str(overreach)])
    print("# Lenient parsing: other projects' cases\n")
    print(format_table(header, rows))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    if args.corpora:
        return corpora()
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
