"""Cases from a file: a tests file's ``dataset: {path, sha256, map, sample, seed}``.

The file (``.jsonl``: one JSON object a line; ``.csv``: a header row, then one row a case) sits
beside the tests file, inside the project, and is read the bounded, confined way every project
file is. Each row becomes a :class:`Case` named by its ``id`` column, else by its row number
(from 1). ``map`` sends a column to ``inputs.<name>``, ``artifacts.<name>`` (the cell as text),
``expect.value``, ``expect.contains`` (several columns may add to it) or
``expect.pointer./path``; with no map every column but ``id`` is an input of that name.

A CSV cell is text. For ``expect.value`` and ``expect.pointer`` it is read as JSON when it is
JSON (``42``, ``true``, ``{"a": 1}``), else taken as the text it is; an empty cell sets nothing
but an input. A JSONL value is taken as it is (``null`` included).

``sample: N`` keeps N rows (all when there are fewer): the rows whose ``sha256(seed, name)`` rank
lowest, in file order. The choice depends on nothing but the seed and the row's name, so it is the
same on every machine and Python, and a row added to the file does not reshuffle the others.
``sha256`` pins the file: when given and the content's digest differs, the tests file is refused.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from scriptorium._files import ConfinedDir, FileProblem
from scriptorium._loading import describe_validation_error
from scriptorium.errors import PromptLoadError
from scriptorium.evals.model import Case, DatasetSpec, TestsFile
from scriptorium.evals.paths import artifact_path

__all__ = ["MAX_DATASET_BYTES", "MAX_DATASET_ROWS", "dataset_cases", "with_dataset"]

#: The largest dataset file read.
MAX_DATASET_BYTES = 64 << 20
#: The most rows a dataset may hold (before sampling).
MAX_DATASET_ROWS = 100_000
_ID = "id"


class _Problem(Exception):
    """What is wrong with a dataset (turned into the tests file's ``PromptLoadError``)."""


def with_dataset(tests: TestsFile, project: str | os.PathLike[str]) -> TestsFile:
    """``tests`` with its dataset's rows appended to its inline cases (itself when it names no
    dataset). ``PromptLoadError(reason="invalid", path=<tests file>)`` when the file cannot be
    read, does not match its ``sha256``, has a bad row, or gives a name twice."""
    if tests.dataset is None:
        return tests
    cases = tests.cases + dataset_cases(tests, project)
    try:
        return TestsFile.model_validate({**tests.model_dump(exclude={"cases"}), "cases": cases})
    except PydanticValidationError as err:
        raise _invalid(tests, describe_validation_error(err)) from err


def dataset_cases(tests: TestsFile, project: str | os.PathLike[str]) -> tuple[Case, ...]:
    """The cases of ``tests``' dataset (see the module docstring); () when it names none."""
    spec = tests.dataset
    if spec is None:
        return ()
    where = f"dataset {spec.path}"
    try:
        try:
            relative = artifact_path(tests, spec.path)
            data = ConfinedDir(project).read(relative, max_bytes=MAX_DATASET_BYTES).data
        except (ValueError, FileProblem) as err:
            raise _Problem(str(err)) from err
        if spec.sha256 is not None:
            digest = hashlib.sha256(data).hexdigest()
            if digest != spec.sha256.lower():
                raise _Problem(
                    f"its content does not match the pinned sha256 (the file's is {digest}): "
                    "update the pin if the change is meant"
                )
        rows = list(_rows(data, csv_file=spec.path.lower().endswith(".csv")))
        named = _named(rows)
        chosen = _sample(named, spec)
        cases = tuple(_case(name, number, row, spec) for number, name, row in chosen)
    except _Problem as err:
        raise _invalid(tests, f"{where}: {err}") from err
    if not cases and not tests.cases:
        raise _invalid(tests, f"{where}: holds no rows, and there are no inline cases")
    return cases


def _invalid(tests: TestsFile, why: str) -> PromptLoadError:
    return PromptLoadError(
        f"tests file prompts/{tests.source}: {why}",
        prompt_id=tests.prompt_id,
        path=tests.source,
        reason="invalid",
    )


def _rows(data: bytes, *, csv_file: bool) -> Iterator[dict[str, Any]]:
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise _Problem(f"not UTF-8 (byte {err.start})") from err
    count = 0
    if csv_file:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if header is None:
            return
        if len(set(header)) != len(header) or any(not column for column in header):
            raise _Problem("the header row names a column twice, or names one ''")
        for row in reader:
            if not row:
                continue
            count += 1
            if len(row) != len(header):
                raise _Problem(f"row {count}: {len(row)} cells for {len(header)} columns")
            _count(count)
            yield dict(zip(header, row, strict=True))
        return
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        count += 1
        _count(count)
        try:
            row = json.loads(line)
        except ValueError as err:
            raise _Problem(f"line {line_number}: not JSON ({err.__class__.__name__})") from err
        if not isinstance(row, dict):
            raise _Problem(f"line {line_number}: a row is a JSON object")
        yield row


def _count(count: int) -> None:
    if count > MAX_DATASET_ROWS:
        raise _Problem(f"more than {MAX_DATASET_ROWS} rows")


def _named(rows: list[dict[str, Any]]) -> list[tuple[int, str, dict[str, Any]]]:
    """Each row with its number (from 1) and its case name: its ``id`` when it has one."""
    named = []
    for number, row in enumerate(rows, start=1):
        ident = row.get(_ID)
        if ident is None or ident == "":
            name = str(number)
        elif isinstance(ident, str | int) and not isinstance(ident, bool):
            name = str(ident)
        else:
            raise _Problem(f"row {number}: the id is a string or an integer")
        named.append((number, name, row))
    return named


def _rank(seed: int, name: str) -> bytes:
    return hashlib.sha256(f"{seed}\x00{name}".encode()).digest()


def _sample(
    rows: list[tuple[int, str, dict[str, Any]]], spec: DatasetSpec
) -> list[tuple[int, str, dict[str, Any]]]:
    if spec.sample is None or spec.sample >= len(rows):
        return rows
    kept = sorted(rows, key=lambda item: _rank(spec.seed, item[1]))[: spec.sample]
    return sorted(kept, key=lambda item: item[0])


def _cell(value: Any, *, csv_file: bool) -> Any:
    """A CSV cell read as JSON when it is JSON (else the text); a JSONL value as it is."""
    if not csv_file or not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _case(name: str, number: int, row: dict[str, Any], spec: DatasetSpec) -> Case:
    csv_file = spec.path.lower().endswith(".csv")
    mapping = spec.map
    if mapping is None:
        mapping = {column: f"inputs.{column}" for column in row if column != _ID}
    inputs: dict[str, Any] = {}
    artifacts: dict[str, Any] = {}
    expect: dict[str, Any] = {}
    for column, target in mapping.items():
        if column not in row:
            if csv_file:
                raise _Problem(f"the map names column {column!r}, which the file does not have")
            continue  # a JSONL row may leave a column out
        value = row[column]
        if csv_file and value == "" and not target.startswith("inputs."):
            continue
        section, _, key = target.partition(".")
        if section == "inputs":
            inputs[key] = value
        elif section == "artifacts":
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            artifacts[key] = {"text": text}
        elif key == "value":
            expect["value"] = _cell(value, csv_file=csv_file)
        elif key == "contains":
            items = value if isinstance(value, list) else [value]
            expect["contains"] = [*expect.get("contains", []), *items]
        else:  # pointer./path
            pointer = key.removeprefix("pointer.")
            expect.setdefault("pointer", {})[pointer] = _cell(value, csv_file=csv_file)
    try:
        return Case.model_validate(
            {"name": name, "inputs": inputs, "artifacts": artifacts, "expect": expect}
        )
    except PydanticValidationError as err:
        raise _Problem(f"row {number} ({name!r}): {describe_validation_error(err)}") from err
