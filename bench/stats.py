"""Summaries and tables: medians over repeated blocks with their min-max, ratios paired by block."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Summary", "format_table", "machine", "paired_ratio", "summarize", "versions"]

#: Every package whose version changes what the table says.
PACKAGES = (
    "scriptorium",
    "anthropic",
    "httpx2",
    "pydantic",
    "pydantic-core",
    "jsonschema",
    "jsonschema-rs",
    "jinja2",
    "instructor",
    "pydantic-ai-slim",
    "langchain-anthropic",
    "langchain-core",
    "pyinstrument",
)


@dataclass(frozen=True)
class Summary:
    """The median of a series of block measurements, with the smallest and largest."""

    median: float
    low: float
    high: float

    def show(self, fmt: str = "{:.0f}") -> str:
        """``median (low-high)`` with ``fmt`` applied to each number."""
        return f"{fmt.format(self.median)} ({fmt.format(self.low)}-{fmt.format(self.high)})"


def summarize(values: Sequence[float]) -> Summary:
    """Median, min and max of ``values`` (at least one)."""
    return Summary(statistics.median(values), min(values), max(values))


def paired_ratio(row: Sequence[float], floor: Sequence[float]) -> Summary:
    """Row over floor, block by block (blocks are interleaved, so each pair shares the machine's
    state at that moment), summarised."""
    return summarize([r / f for r, f in zip(row, floor, strict=True) if f > 0])


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    for row in rows:
        cells = [str(c).ljust(w) for c, w in zip(row, widths, strict=True)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def versions() -> dict[str, str]:
    """Installed version of each package in :data:`PACKAGES` ("not installed" when absent)."""
    found: dict[str, str] = {}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def machine() -> str:
    """One line describing the interpreter and the machine."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"Python {sys.version.split()[0]} ({platform.python_implementation()}), "
        f"{platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} CPUs"
    )
