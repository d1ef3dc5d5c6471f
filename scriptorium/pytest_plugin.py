"""A pytest plugin: ``pytest --scriptorium`` collects every case of every ``*.tests.yaml`` file
under ``prompts/`` as a test item (one per case and profile), so a project's prompt tests run in
its own test suite.

Installed with scriptorium (entry point ``pytest11``), so it loads in every pytest run of every
project that has scriptorium installed: without ``--scriptorium`` it only adds its options and
imports nothing of scriptorium. With it, ``--scriptorium-profile NAME`` (repeatable) runs the
cases on those profiles instead of each file's own, ``--scriptorium-cassettes record|replay``
switches replay profiles as ``scriptorium test --record`` / ``--replay`` do, and
``--scriptorium-against REF`` runs each case on that version too, as ``scriptorium test
--against`` does: the item then fails when the case is marked ``must_pass`` and regressed, or its
repeats are worse beyond chance; each item shows its comparison, and the terminal summary the
changed cases and the paired test over every pair of the session (which fails the session when
the candidate is worse). The version is read once per session.

An item runs its case's repeats through ``Engine.test`` over the project the file belongs to (the
directory holding its ``prompts/``); it fails with the expectations that failed and the values
seen, or with the judge errors that left repeats unscored.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from scriptorium.engine import Engine
    from scriptorium.evals.reference import Reference
    from scriptorium.evals.report import CaseChange, CaseReport, TestReport, VersionComparison

__all__ = [
    "CaseItem",
    "CaseNotMet",
    "CasesFile",
    "pytest_addoption",
    "pytest_collect_file",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
]

_SUFFIX = ".tests.yaml"
_ENGINES = pytest.StashKey[dict[Path, "Engine"]]()
_REFERENCES = pytest.StashKey[dict[Path, "Reference"]]()
#: Per compared item: its case change and its (before, after) repeat outcomes.
_COMPARED = pytest.StashKey[list[tuple["CaseChange", list[tuple[bool | None, bool | None]]]]]()


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
    group.addoption(
        "--scriptorium-against",
        default=None,
        metavar="REF",
        help="also run each case on this version (a git revision or a directory holding "
        "prompts/) and compare, as scriptorium test --against does",
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


class ComparisonFailed(Exception):
    """A case whose comparison failed (``--scriptorium-against``): a ``must_pass`` case that
    regressed, or repeats worse beyond chance."""

    def __init__(self, comparison: VersionComparison) -> None:
        super().__init__(comparison.against)
        self.comparison = comparison


def _reference(config: pytest.Config, root: Path, ref: str) -> Reference:
    """The version ``ref`` names for the project at ``root``, read once per session (a git
    revision's copy is removed when the session ends)."""
    from scriptorium.evals.reference import open_reference

    references = config.stash.setdefault(_REFERENCES, {})
    key = root.resolve()
    if key not in references:
        stack = contextlib.ExitStack()
        config.add_cleanup(stack.close)
        references[key] = stack.enter_context(open_reference(ref, key))
    return references[key]


def _describe_change(change: CaseChange) -> str:
    must = " (must_pass)" if change.must_pass else ""
    lines = [
        f"{change.change}{must}: {change.prompt} [{change.profile}] {change.case}: "
        f"{change.before_passed}/{change.before_scored} passed before, "
        f"{change.after_passed}/{change.after_scored} after"
    ]
    if change.diff is not None:
        lines.extend(f"  {line}" for line in change.diff.lines[:40])
    return "\n".join(lines)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """With ``--scriptorium-against``: the changed cases and the paired test over the session."""
    compared = config.stash.get(_COMPARED, None)
    if not compared:
        return
    from scriptorium.evals.compare import paired_verdict

    ref = config.getoption("scriptorium_against")
    counts, p_value, worse = paired_verdict(pair for _, pairs in compared for pair in pairs)
    changes = [change for change, _ in compared]
    terminalreporter.section(f"scriptorium against {ref}")
    for change in changes:
        if change.change != "same":
            terminalreporter.line(_describe_change(change).splitlines()[0])
    terminalreporter.line(
        f"{sum(c.change == 'fixed' for c in changes)} fixed, "
        f"{sum(c.change == 'regressed' for c in changes)} regressed, "
        f"{sum(c.change == 'same' for c in changes)} same; paired exact test (McNemar, "
        f"two-sided): {counts.wins} runs fixed, {counts.losses} regressed, p = {p_value:.4g}"
        + (": WORSE" if worse else "")
    )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With ``--scriptorium-against``: the session fails when, over all its pairs, the candidate
    is worse beyond chance (each item judged only its own case)."""
    compared = session.config.stash.get(_COMPARED, None)
    if not compared or exitstatus != 0:
        return
    from scriptorium.evals.compare import paired_verdict

    if paired_verdict(pair for _, pairs in compared for pair in pairs)[2]:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


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
        against = self.config.getoption("scriptorium_against")
        report = engine.test(
            [self.prompt_id],
            [self.profile],
            cases=[self.case],
            cassettes=self.config.getoption("scriptorium_cassettes"),
            against=None if against is None else _reference(self.config, self.root, against),
        )
        self._not_met: list[CaseReport] = []
        self._comparison: TestReport | None = None
        if report.comparison is not None:
            # Judged in the call phase: a comparison that fails is a failure of the test.
            self._comparison = report
            return
        for case in report.all_cases():
            outcome = junit_outcome(case)
            if outcome == "error":
                raise CaseNotMet(case)
            if outcome == "failure":
                self._not_met.append(case)

    def runtest(self) -> None:
        compared = getattr(self, "_comparison", None)
        if compared is not None:
            self._compared(compared)
            return
        for case in getattr(self, "_not_met", ()):
            raise CaseNotMet(case)

    def _compared(self, report: TestReport) -> None:
        from scriptorium.evals.compare import repeat_pairs

        comparison = report.comparison
        assert comparison is not None
        before = [] if comparison.before is None else comparison.before.all_cases()
        pairs = list(repeat_pairs(before, report.all_cases()))
        for change in comparison.cases:
            self.config.stash.setdefault(_COMPARED, []).append((change, pairs))
            self.add_report_section("call", "scriptorium --against", _describe_change(change))
        if not comparison.ok:
            raise ComparisonFailed(comparison)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        from scriptorium.errors import ScriptoriumError

        error = excinfo.value
        if isinstance(error, CaseNotMet):
            return _describe(error.case)
        if isinstance(error, ComparisonFailed):
            return "\n".join(_describe_change(c) for c in error.comparison.cases) + (
                f"\nworse than {error.comparison.against}: p = {error.comparison.p_value:.4g}"
                if error.comparison.worse
                else ""
            )
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
