"""Running a test suite: the matrix of cases x profiles x repeats, sent through the composition
root's ``run_many`` (bounded concurrency, the profiles' rate limits, fallbacks, cassettes) or a
provider batch, then the judges, then the report.

The suite knows no adapter: the engine hands it the repositories and the two ways to run
requests (:data:`RunMany`, :data:`RunBatch`). Two phases:

1. every case run (each repeat is its own run); each outcome is checked against the case's
   expectations as it arrives (the progress line counts it);
2. the judges, for the repeats that met every other expectation (a judge cannot change a repeat
   that already failed, so it is not paid for), as ordinary runs of the bundled judge prompt.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, Protocol

from scriptorium.errors import (
    APIKeyEnvMissingError,
    APIKeyRequiredError,
    InvalidRequestError,
    ProfileRequiredError,
    ScriptoriumError,
    translate,
)
from scriptorium.evals.expect import check_result
from scriptorium.evals.judge import judge_request, run_error, verdict
from scriptorium.evals.model import MAX_REPEAT, Case, TestsFile
from scriptorium.evals.report import (
    ExpectationFailure,
    GroupReport,
    JudgeVerdict,
    RepeatOutcome,
    RunError,
    TestReport,
)
from scriptorium.evals.score import build_report, case_report, group_report
from scriptorium.llm.pricing import gateway_cost_micro

if TYPE_CHECKING:
    from scriptorium.artifact.model import ArtifactContent
    from scriptorium.profile.repository import Repository as ProfileRepository
    from scriptorium.promptdef.repository import Repository as PromptRepository
    from scriptorium.usecase.model import RunRequest, RunResult

__all__ = [
    "CaseArtifacts",
    "Progress",
    "RunBatch",
    "RunMany",
    "Suite",
    "SuiteFiles",
]


class RunMany(Protocol):
    """Runs requests with bounded concurrency (the engine's ``run_many``), calling
    ``on_outcome(position, outcome)`` as each finishes (from any thread); returns the outcomes
    in order."""

    def __call__(
        self,
        requests: list[RunRequest],
        concurrency: int,
        on_outcome: Callable[[int, RunResult | ScriptoriumError], None],
    ) -> list[RunResult | ScriptoriumError]: ...


class RunBatch(Protocol):
    """Runs requests through the provider's batch API; returns the outcomes in order."""

    def __call__(self, requests: list[RunRequest]) -> list[RunResult | ScriptoriumError]: ...


class CaseArtifacts(Protocol):
    """The artifacts of a run of a case (read from the project)."""

    def __call__(self, tests: TestsFile, case: Case) -> dict[str, str | ArtifactContent]: ...


class SuiteFiles(Protocol):
    """Where a project's tests files are read from (``scriptorium.evals.files.TestFiles``)."""

    def list(self) -> list[str]:
        """Every prompt id with a tests file, sorted."""
        ...

    def get(self, prompt_id: str) -> TestsFile:
        """The tests of ``prompt_id`` (``PromptLoadError`` when missing or invalid)."""
        ...


@dataclass(frozen=True)
class Progress:
    """How far a test run is: runs ``done`` of ``total`` in ``phase``, the repeats passing and
    failing so far (a repeat waiting for its judge counts as passing), the cost so far (judges
    included) and the seconds since the run started."""

    phase: Literal["cases", "judges"]
    done: int
    total: int
    passing: int
    failing: int
    cost_micro: int
    elapsed_s: float


@dataclass
class _Run:
    """One planned run of a case (and, once it ran, what came of it)."""

    tests: TestsFile
    case: Case
    profile: str
    repeat: int
    request: RunRequest | None = None
    error: ScriptoriumError | None = None
    result: RunResult | None = None
    failures: list[ExpectationFailure] = field(default_factory=list)
    judge: JudgeVerdict | None = None
    settled: bool = False

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.tests.prompt_id, self.profile, self.case.name)


class _Tally:
    """The progress counts, updated from the executor's threads."""

    def __init__(self, total: int, on_progress: Callable[[Progress], None] | None) -> None:
        self._lock = threading.Lock()
        self._on_progress = on_progress
        self._started = time.monotonic()
        self.phase: Literal["cases", "judges"] = "cases"
        self.total = total
        self.done = 0
        self.passing = 0
        self.failing = 0
        self.cost_micro = 0

    def add(self, *, passing: int = 0, failing: int = 0, cost_micro: int = 0) -> None:
        with self._lock:
            self.done += 1
            self.passing += passing
            self.failing += failing
            self.cost_micro += cost_micro
            self._show()

    def start_judges(self, total: int) -> None:
        with self._lock:
            self.phase, self.total, self.done = "judges", total, 0
            self._show()

    def _show(self) -> None:
        if self._on_progress is None:
            return
        self._on_progress(
            Progress(
                phase=self.phase,
                done=self.done,
                total=self.total,
                passing=self.passing,
                failing=self.failing,
                cost_micro=self.cost_micro,
                elapsed_s=time.monotonic() - self._started,
            )
        )


class Suite:
    """The tests of a project, run over the collaborators the engine gives it."""

    def __init__(
        self,
        *,
        tests: SuiteFiles,
        artifacts: CaseArtifacts,
        prompts: PromptRepository,
        profiles: ProfileRepository,
        run_many: RunMany,
        run_batch: RunBatch | None = None,
        prepare: Callable[[RunRequest], object] | None = None,
        default_profile: str | None = None,
    ) -> None:
        self._tests = tests
        self._prepare = prepare
        self._artifacts = artifacts
        self._prompts = prompts
        self._profiles = profiles
        self._run_many = run_many
        self._run_batch = run_batch
        self._default_profile = default_profile

    # -- the plan ------------------------------------------------------------------------------

    def files(self, prompts: Sequence[str] | None) -> list[TestsFile]:
        """The tests files of ``prompts`` (all of the project's when None): ``InvalidRequestError``
        when there are none, ``PromptLoadError`` for one missing or invalid."""
        ids = list(dict.fromkeys(prompts)) if prompts else self._tests.list()
        if not ids:
            raise InvalidRequestError(
                "no tests files: write prompts/<id>.tests.yaml beside a prompt",
                field="prompts",
            )
        return [self._tests.get(prompt_id) for prompt_id in ids]

    def _profiles_of(
        self, tests: TestsFile, given: Sequence[str] | Mapping[str, Sequence[str]] | None
    ) -> list[str]:
        if isinstance(given, Mapping):  # per prompt (a reference run: the candidate's profiles)
            given = given.get(tests.prompt_id)
        if given:
            return list(dict.fromkeys(given))
        name = tests.profile or self._prompts.get(tests.prompt_id).profile or self._default_profile
        if name is None:
            raise ProfileRequiredError(
                f"{tests.source} names no profile, nor does prompt {tests.prompt_id!r}: set "
                "'profile' in the tests file or pass -p PROFILE",
                prompt_id=tests.prompt_id,
            )
        return [name]

    def plan(
        self,
        prompts: Sequence[str] | None = None,
        profiles: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
        repeat: int | None = None,
        *,
        cases: Collection[str] | None = None,
    ) -> list[_Run]:
        """Every run the suite makes, grouped by prompt, profile and case, repeats in order. Each
        profile (the judges' included) is loaded first, so a missing or refused one stops the
        suite before anything is spent."""
        if repeat is not None and not 1 <= repeat <= MAX_REPEAT:
            raise InvalidRequestError(f"repeat must be from 1 to {MAX_REPEAT}", field="repeat")
        runs: list[_Run] = []
        used: set[str] = set()
        for tests in self.files(prompts):
            self._prompts.get(tests.prompt_id)  # a tests file whose prompt does not load stops here
            selected = [c for c in tests.cases if cases is None or c.name in cases]
            for profile in self._profiles_of(tests, profiles):
                used.add(profile)
                for case in selected:
                    if case.expect.judge is not None:
                        used.add(case.expect.judge.profile)
                    for number in range(1, (repeat or tests.repeat) + 1):
                        runs.append(_Run(tests, case, profile, number))
        for name in sorted(used):
            self._profiles.get(name)
        built: dict[tuple[str, str, str], RunRequest | ScriptoriumError] = {}
        for run in runs:
            key = run.key
            if key not in built:
                built[key] = self._request(run)
            found = built[key]
            if isinstance(found, ScriptoriumError):
                run.error = found
            else:
                # One object per run: outcomes are told apart by the request object.
                run.request = found.model_copy()
        self._check_keys(runs)
        return runs

    def _check_keys(self, runs: list[_Run]) -> None:
        """Prepare one run per profile (and one judge run per judge profile): a key variable that
        is unset stops the suite now, once, rather than failing every case."""
        if self._prepare is None:
            return
        probes: dict[str, RunRequest] = {}
        for run in runs:
            if run.request is not None:
                probes.setdefault(run.profile, run.request)
            spec = run.case.expect.judge
            if spec is not None:
                probes.setdefault(spec.profile, judge_request(spec, "", {}))
        for request in probes.values():
            try:
                self._prepare(request)
            except (APIKeyEnvMissingError, APIKeyRequiredError):
                raise
            except ScriptoriumError:
                continue  # the case's own failure, reported with it

    def _request(self, run: _Run) -> RunRequest | ScriptoriumError:
        """The request of a case on a profile (its artifacts read once for every repeat), or why
        there is none."""
        from scriptorium.usecase.model import RunRequest

        try:
            artifacts = self._artifacts(run.tests, run.case)
            with translate(InvalidRequestError, f"case {run.case.name!r}", field="inputs"):
                return RunRequest(
                    prompt_id=run.tests.prompt_id,
                    profile=run.profile,
                    inputs=run.case.inputs,
                    artifacts=artifacts,
                )
        except ScriptoriumError as err:
            return err

    # -- running -------------------------------------------------------------------------------

    def run(
        self,
        prompts: Sequence[str] | None = None,
        profiles: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
        repeat: int | None = None,
        *,
        cases: Collection[str] | None = None,
        concurrency: int = 8,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> TestReport:
        """Plan, run the cases, run the judges, and report (see the module docstring)."""
        if concurrency < 1:
            raise InvalidRequestError("concurrency must be at least 1", field="concurrency")
        started_at, started = datetime.now(UTC), time.monotonic()
        runs = self.plan(prompts, profiles, repeat, cases=cases)
        tally = _Tally(len(runs), on_progress)
        self._run_cases(runs, concurrency, tally)
        self._run_judges(runs, concurrency, tally)
        return build_report(
            _groups(runs),
            started_at=started_at,
            duration_ms=(time.monotonic() - started) * 1000.0,
            provider_batch=self._run_batch is not None,
        )

    def _run_cases(self, runs: list[_Run], concurrency: int, tally: _Tally) -> None:
        for run in runs:
            if run.error is not None:  # its request could not be built: nothing to send
                self._settle(run, run.error, tally)
        ready = [run for run in runs if run.request is not None]
        requests = [run.request for run in ready if run.request is not None]
        if not requests:
            return
        if self._run_batch is not None:
            outcomes = self._run_batch(requests)
        else:
            outcomes = self._run_many(
                requests,
                concurrency,
                lambda index, outcome: self._settle(ready[index], outcome, tally),
            )
        # Outcomes settled as they came are left as they are; the rest are settled now.
        for run, outcome in zip(ready, outcomes, strict=True):
            self._settle(run, outcome, tally)

    @staticmethod
    def _settle(run: _Run, outcome: RunResult | ScriptoriumError, tally: _Tally) -> None:
        if run.settled:
            return
        run.settled = True
        if isinstance(outcome, ScriptoriumError):
            run.error = outcome
            run.failures = [_run_failure(outcome)]
            tally.add(failing=1)
            return
        run.result = outcome
        run.failures = check_result(run.case.expect, outcome)
        failed = int(bool(run.failures))
        tally.add(passing=1 - failed, failing=failed, cost_micro=outcome.usage.cost_micro)

    def _run_judges(self, runs: list[_Run], concurrency: int, tally: _Tally) -> None:
        judged = [
            run
            for run in runs
            if run.result is not None and not run.failures and run.case.expect.judge is not None
        ]
        if not judged:
            return
        tally.start_judges(len(judged))
        requests = []
        for run in judged:
            spec = run.case.expect.judge
            assert spec is not None
            assert run.result is not None
            requests.append(judge_request(spec, run.result.output.text, run.case.inputs))

        def on_outcome(index: int, outcome: RunResult | ScriptoriumError) -> None:
            run = judged[index]
            if run.judge is None:
                self._judged(run, outcome, tally)

        outcomes = self._run_many(requests, concurrency, on_outcome)
        for run, outcome in zip(judged, outcomes, strict=True):
            if run.judge is None:
                self._judged(run, outcome, tally)

    @staticmethod
    def _judged(run: _Run, outcome: RunResult | ScriptoriumError, tally: _Tally) -> None:
        spec = run.case.expect.judge
        assert spec is not None  # only judged runs get here
        run.judge = verdict(spec, outcome)
        if run.judge.passed is False:
            run.failures.append(
                ExpectationFailure(
                    expectation="judge",
                    expected=spec.rubric,
                    seen=run.judge.reason,
                    message="the judge found that the output does not meet the rubric",
                )
            )
        # The repeat counted as passing while it waited; a failure or a judge error takes it back.
        verdict_known = run.judge.passed is not None
        failed = int(run.judge.passed is False)
        tally.add(
            passing=0 if verdict_known and not failed else -1,
            failing=failed,
            cost_micro=run.judge.cost_micro,
        )


def _run_failure(err: ScriptoriumError) -> ExpectationFailure:
    return ExpectationFailure(
        expectation="run",
        seen=f"{err.code}: {err.message}",
        message="the run failed before there was an output to check",
    )


def _outcome(run: _Run) -> RepeatOutcome:
    result = run.result
    error: RunError | None = None if run.error is None else run_error(run.error)
    if run.failures:
        status: Literal["passed", "failed", "judge_error"] = "failed"
    elif run.judge is not None and run.judge.passed is None:
        status = "judge_error"
    else:
        status = "passed"
    return RepeatOutcome(
        repeat=run.repeat,
        status=status,
        failures=tuple(run.failures),
        error=error,
        judge=run.judge,
        valid=None if result is None else result.validation.valid,
        cost_micro=0 if result is None else result.usage.cost_micro,
        gateway_cost_micro=0 if result is None else gateway_cost_micro(result.metadata),
        latency_ms=None if result is None else result.duration_ms,
        output_tokens=None if result is None else result.usage.output_tokens,
        request_hash=None if result is None else result.prepared.request_hash,
        output=None if result is None else _cut(result.output.text),
        value=_parsed(result),
    )


_OUTPUT_CHARS = 10_000


def _cut(text: str) -> str:
    if len(text) <= _OUTPUT_CHARS:
        return text
    return text[:_OUTPUT_CHARS] + f"... ({len(text) - _OUTPUT_CHARS} more characters)"


def _parsed(result: RunResult | None) -> object:
    """The parsed value of a JSON output (None for text, or when it did not parse)."""
    if result is None or result.validation.format == "text":
        return None
    return result.validation.value


def _case_facts(case: Case) -> dict[str, object]:
    """What a case report repeats of its tests file: ``must_pass`` and the expectations."""
    expect = case.expect.model_dump(mode="json", exclude_unset=True)
    return {"must_pass": case.must_pass, "expect": expect or None}


def _groups(runs: list[_Run]) -> list[GroupReport]:
    """The runs as reports, in plan order: one group per prompt and profile."""
    by_case: dict[tuple[str, str, str], list[_Run]] = {}
    for run in runs:
        by_case.setdefault(run.key, []).append(run)
    by_group: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for key in by_case:
        by_group.setdefault(key[:2], []).append(key)
    groups = []
    for (prompt, profile), keys in by_group.items():
        cases = [
            case_report(
                prompt,
                profile,
                key[2],
                by_case[key][0].case.min_pass_rate,
                [_outcome(run) for run in by_case[key]],
            ).model_copy(update=_case_facts(by_case[key][0].case))
            for key in keys
        ]
        groups.append(group_report(prompt, profile, cases))
    return groups
