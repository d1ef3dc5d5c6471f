"""Every plausible reading of one value in a text, within a work budget.

The tolerant reader (:mod:`.tolerant`) reads one way per run; where a slip can be
read two ways it takes the alternative its ``choices`` name and records the spot. :func:`explore`
runs it over every combination of alternatives (depth first, each combination once) and returns the
readings that succeed. A reading that fails is not plausible; two that succeed with different values
are for the caller to settle (the schema, or ``ambiguous``).

Cost: one run reads forward only, so it costs what it reads. At most :data:`MAX_RUNS` runs are
made per value, and every run is charged to a :class:`Budget` sized from the text's length, so the
lenient parser's work is linear in its input whatever the text holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scriptorium.validate.json.tolerant.cursor import ReadError
from scriptorium.validate.json.tolerant.reader import Reader

__all__ = [
    "MAX_RUNS",
    "RUN_COST",
    "WORK_PER_CHAR",
    "Budget",
    "OutOfWork",
    "Reading",
    "explore",
    "plausible",
]

#: Runs of the reader allowed for one value; a value with more combinations is ``ambiguous``.
MAX_RUNS = 16
#: Work allowed per character of input, over a whole lenient parse.
WORK_PER_CHAR = 48
#: What one run of the reader costs besides the characters it looks at (setting it up).
RUN_COST = 32
_WORK_SLACK = 4096


@dataclass(frozen=True, slots=True)
class Reading:
    """One successful reading: the value, the offset just past it, and the fixes it needed.

    ``complete`` is false for a reading that closed the value before members or items that
    continue it (``{"a": 1}, "b": 2}`` read as ``{"a": 1}``): it competes with the other readings
    but is never an answer. ``assumed_missing`` says the reading took a closing bracket to be
    missing before a wrong one (so where it ends is an artifact of that guess).
    """

    value: Any
    end: int
    fixes: tuple[str, ...]
    complete: bool = True
    assumed_missing: bool = False


class OutOfWork(Exception):
    """Raised when a parse has looked at more text than its budget allows."""


class Budget:
    """How much reading one lenient parse may do: ``WORK_PER_CHAR`` per input character.

    ``used`` counts characters looked at plus ``RUN_COST`` per run of the reader; ``runs``
    counts runs.
    """

    def __init__(self, text_length: int) -> None:
        self.limit = WORK_PER_CHAR * text_length + _WORK_SLACK
        self.used = 0
        self.runs = 0

    def charge(self, amount: int) -> None:
        """Count ``amount`` characters read; raise :class:`OutOfWork` past the limit."""
        self.used += amount + RUN_COST
        self.runs += 1
        if self.used > self.limit:
            raise OutOfWork(f"reading the text took more than {self.limit} steps")


def explore(
    new_reader: Callable[[tuple[int, ...]], Reader],
    read: Callable[[Reader], tuple[Any, int]],
    start: int,
    budget: Budget,
) -> tuple[list[Reading], ReadError | None]:
    """Every successful reading of the value at ``start``, and the default reading's error.

    ``new_reader(choices)`` builds a reader that takes those alternatives; ``read(reader)`` reads
    the value and returns it with the offset past it. The first run takes alternative 0 everywhere
    (the default reading); its error, if it fails, is the one reported when every reading fails.
    More than :data:`MAX_RUNS` runs is itself an error (``ambiguous``).
    """
    readings: list[Reading] = []
    first_error: ReadError | None = None
    pending: list[tuple[int, ...]] = [()]
    runs = 0
    while pending:
        choices = pending.pop()
        runs += 1
        if runs > MAX_RUNS:
            if not readings and first_error is not None and first_error.keyword == "truncated":
                return [], first_error  # read as it stands, the value runs off the end
            error = ReadError(start, "ambiguous", "the value reads too many different ways")
            return [], error
        reader = new_reader(choices)
        try:
            value, end = read(reader)
        except ReadError as err:
            first_error = first_error or err
            budget.charge(max(reader.reach, err.pos) - start + 1)
        else:
            complete = reader.continued_at is None
            readings.append(
                Reading(value, end, tuple(reader.fixes), complete, reader.assumed_missing)
            )
            budget.charge(max(reader.reach, end) - start + 1)
        # Spots met past the given choices were read with alternative 0; queue the others.
        for index in range(len(choices), len(reader.points)):
            base = choices + (0,) * (index - len(choices))
            pending.extend((*base, alt) for alt in range(reader.points[index] - 1, 0, -1))
    return readings, first_error


def plausible(readings: list[Reading]) -> tuple[Reading, ...]:
    """The readings a careful reader would weigh: those that read furthest, and those that
    closed the value early (``complete`` false) without guessing a missing bracket.

    A reading that stops early because it took a closing bracket for missing leaves text that
    continues the value (``{"a": [1, 2}, "b": 3}`` read as ``{"a": [1, 2]}``): the reading that
    reads on is the one meant. A value closed by its own bracket before members that follow it
    is another matter: it stays, so the rule sees both readings.
    """
    if not readings:
        return ()
    far = max(reading.end for reading in readings)
    return tuple(
        reading
        for reading in readings
        if reading.end == far or (not reading.complete and not reading.assumed_missing)
    )
