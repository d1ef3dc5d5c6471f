"""A pytest plugin: ``pytest --scriptorium`` collects every case of every ``*.tests.yaml`` file
under ``prompts/`` as a test item (one per case and profile), so a project's prompt tests run in
its own test suite.

Installed with scriptorium (entry point ``pytest11``), so it loads in every pytest run of every
project that has scriptorium installed: without ``--scriptorium`` it only adds its options and
imports nothing of scriptorium. With it, ``--scriptorium-profile NAME`` (repeatable) runs the
cases on those profiles instead of each file's own, and ``--scriptorium-cassettes record|replay``
switches replay profiles as ``scriptorium test --record`` / ``--replay`` do.

An item runs its case's repeats through ``Engine.test`` over the project the file belongs to (the
directory holding its ``prompts/``); it fails with the expectations that failed and the values
seen, or with the judge errors that left repeats unscored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from scriptorium.engine import Engine
    from scriptorium.evals.report import CaseReport

__all__ = [
    "CaseItem",
    "CaseNotMet",
    "CasesFile",
    "pytest_addoption",
    "pytest_collect_file",
]

_SUFFIX = ".tests.yaml"
_ENGINES = pytest.StashKey[dict[Path, "Engine"]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's options (all it does without ``--scriptorium``)."""
    group = parser.getgroup("scriptorium", "prompt tests (scriptorium)")
    group.addoption(
        "--scriptorium",
        action="store_true",
        default=False,
        help="collect the cases of every prompts/**/*.tests.yaml as tests",
    )
    group.addoption(
        "--scriptorium-profile",
        action="append",
        default=[],
        metavar="NAME",
        help="run the cases on this profile (repeatable; default: each tests file's profile)",
    )
    group.addoption(
        "--scriptorium-cassettes",
        choices=("record", "replay"),
        default=None,
        help="record: run replay profiles live and append to their cassettes; replay: answer "
        "them from their cassettes only",
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A tests file's collector, when ``--scriptorium`` is on."""
    if not parent.config.getoption("scriptorium") or not file_path.name.endswith(_SUFFIX):
        return None
    return CasesFile.from_parent(parent, path=file_path)


def _place(path: Path) -> tuple[Path, str] | None:
    """The project root and prompt id of a tests file: the nearest ``prompts`` folder above it
    belongs to the project."""
    for ancestor in path.parents:
        if ancestor.name == "prompts":
            relative = path.relative_to(ancestor).as_posix()
            return ancestor.parent, relative.removesuffix(_SUFFIX)
    return None


def _engine(config: pytest.Config, root: Path) -> Engine:
    from scriptorium.engine import Engine

    engines = config.stash.setdefault(_ENGINES, {})
    key = root.resolve()
    if key not in engines:
        engines[key] = Engine(key)
    return engines[key]


class CasesFile(pytest.File):
    """One ``<id>.tests.yaml``: an item per case and profile."""

    def collect(self) -> Iterator[pytest.Item]:
        from scriptorium.errors import ScriptoriumError
        from scriptorium.evals.files import TestFiles

        place = _place(self.path)
        if place is None:
            raise self.CollectError(f"{self.path.name} is not under a prompts/ folder")
        root, prompt_id = place
        engine = _engine(self.config, root)
        given = self.config.getoption("scriptorium_profile") or None
        try:
            tests = TestFiles(root / "prompts").get(prompt_id)
            own = tests.profile or engine.prompts.get(prompt_id).profile
        except ScriptoriumError as err:
            raise self.CollectError(f"{err.code}: {err.message}") from err
        profiles = given or ([] if own is None else [own])
        if not profiles:
            raise self.CollectError(
                f"{self.path.name} names no profile, nor does prompt {prompt_id!r}: set 'profile' "
                "in the file or pass --scriptorium-profile NAME"
            )
        for profile in dict.fromkeys(profiles):
            for case in tests.cases:
                yield CaseItem.from_parent(
                    self,
                    name=f"{case.name}[{profile}]",
                    root=root,
                    prompt_id=prompt_id,
                    profile=profile,
                    case=case.name,
                )


class CaseNotMet(Exception):
    """A case that did not pass: what failed, for the report."""

    def __init__(self, case: CaseReport) -> None:
        super().__init__(_describe(case))
        self.case = case


class CaseItem(pytest.Item):
    """One case on one profile, over its repeats."""

    def __init__(
        self, *, root: Path, prompt_id: str, profile: str, case: str, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.root = root
        self.prompt_id = prompt_id
        self.profile = profile
        self.case = case

    def setup(self) -> None:
        # The case runs here, so that one that could not be judged (its run or its judge
        # failed) is reported as an error, as `scriptorium test --junit` counts it
        # (junit_outcome); a failed expectation is a failure of the test itself.
        from scriptorium.evals.junit import junit_outcome

        engine = _engine(self.config, self.root)
        report = engine.test(
            [self.prompt_id],
            [self.profile],
            cases=[self.case],
            cassettes=self.config.getoption("scriptorium_cassettes"),
        )
        self._not_met: list[CaseReport] = []
        for case in report.all_cases():
            outcome = junit_outcome(case)
            if outcome == "error":
                raise CaseNotMet(case)
            if outcome == "failure":
                self._not_met.append(case)

    def runtest(self) -> None:
        for case in getattr(self, "_not_met", ()):
            raise CaseNotMet(case)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        from scriptorium.errors import ScriptoriumError

        error = excinfo.value
        if isinstance(error, CaseNotMet):
            return _describe(error.case)
        if isinstance(error, ScriptoriumError):
            return f"{error.code}: {error.message}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.prompt_id} [{self.profile}] {self.case}"


def _describe(case: CaseReport) -> str:
    rate = "n/a" if case.pass_rate is None else f"{case.pass_rate:.0%}"
    lines = [
        f"{case.prompt} [{case.profile}] {case.case}: {case.passed}/{case.scored} scored repeats "
        f"passed ({rate}), needs {case.min_pass_rate:.0%}"
        + (f"; {case.judge_errors} judge errors (not scored)" if case.judge_errors else "")
    ]
    for outcome in case.outcomes:
        for failure in outcome.failures:
            lines.append(f"  repeat {outcome.repeat}: {failure.expectation}: {failure.message}")
            if failure.expected is not None:
                lines.append(f"    expected: {failure.expected!r}")
            if failure.seen is not None:
                lines.append(f"    seen:     {failure.seen!r}")
        judge = outcome.judge
        if judge is not None and judge.error is not None:
            lines.append(
                f"  repeat {outcome.repeat}: judge error: {judge.error.code}: {judge.error.message}"
            )
    return "\n".join(lines)
