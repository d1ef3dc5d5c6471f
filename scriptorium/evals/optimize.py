"""``scriptorium optimize``: improve the marked regions of a prompt against its own test cases,
and hand back a reviewed diff of the prompt file.

The loop knows no adapter: the engine hands it the prompt file's text, its tests file, and two
ports (:class:`Evaluate` runs cases on a version of the prompt and reports them; :class:`Propose`
runs the bundled optimiser prompt). In order:

1. The cases are split by ``seed`` into train and held-out (:func:`split_cases`); a tests file
   that cannot hold out at least :data:`MIN_HOLDOUT` cases (and train on one) is refused.
2. The seed (the prompt as it is) runs on train. While candidates and budget remain: the
   optimiser sees the marked regions and the failing train cases of the best version so far and
   proposes new text for each region; the candidate runs on train; one that beats the seed and
   every earlier candidate on train runs on held-out beside the seed.
3. A candidate is accepted only when, on held-out, it passes more case-and-repeat pairs than the
   seed with a one-sided exact paired test below :data:`ALPHA`, and no case marked
   ``must_pass`` failed in any of its runs.

Every run counts against ``budget_micro`` (cases, judges, the optimiser's own); a step whose
estimated cost (what the same kind of step cost before) would pass the budget is not started.
Nothing here writes the prompt file: the engine writes the accepted text to a new file.
"""

from __future__ import annotations

import difflib
import functools
import math
import os
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from scriptorium._sidefiles import SideFileTaken, create_exclusive
from scriptorium.errors import InvalidRequestError, ScriptoriumError
from scriptorium.evals.bundled import bundled_prompt
from scriptorium.evals.regions import Region, replace_regions
from scriptorium.evals.stats import mcnemar_exact
from scriptorium.hashing import canonical_json

if TYPE_CHECKING:
    from scriptorium.evals.model import TestsFile
    from scriptorium.evals.report import CaseReport, TestReport
    from scriptorium.promptdef.model import PromptDefinition
    from scriptorium.promptdef.repository import Repository
    from scriptorium.usecase.model import RunResult

__all__ = [
    "ALPHA",
    "MIN_HOLDOUT",
    "OPTIMIZER_FILE",
    "OPTIMIZER_PROMPT_ID",
    "CandidateReport",
    "Evaluate",
    "Optimization",
    "OptimizeReport",
    "OptimizeScore",
    "Propose",
    "VersionPrompts",
    "optimizer_definition",
    "split_cases",
    "write_new_file",
]

#: The id the bundled optimiser prompt runs under, and its file in this package.
OPTIMIZER_PROMPT_ID = "scriptorium/optimizer"
OPTIMIZER_FILE = "optimizer.prompt.md"
#: The fewest held-out cases a split may have: fewer cannot show a difference.
MIN_HOLDOUT = 3
#: The level of the one-sided exact paired test a candidate must pass on held-out.
ALPHA = 0.05
#: The form of the JSON report (``OptimizeReport.version``).
OPTIMIZE_REPORT_VERSION = 1
_SHOWN_CHARS = 400
_FAILING_CASES_SHOWN = 12

_FROZEN = ConfigDict(frozen=True, extra="forbid")
#: ``(case name, repeat) -> passed`` (None: unscored, the judge gave no verdict).
Pairs = Mapping[tuple[str, int], "bool | None"]


class OptimizeScore(BaseModel):
    """How a version of the prompt did on a set of cases: repeats passed and failed, of those
    scored (judge errors are left out), and their cost (cases and judges)."""

    model_config = _FROZEN

    passed: int = Field(ge=0)
    failed: int = Field(ge=0)
    scored: int = Field(ge=0)
    pass_rate: float | None = None
    cost_micro: int = Field(default=0, ge=0)


class CandidateReport(BaseModel):
    """One proposal of the optimiser: the region texts, the diff against the prompt file, its
    scores on train (and held-out when it got that far), the paired test against the seed, and
    what it cost (its proposal and its runs). ``note`` says why it stopped where it did."""

    model_config = _FROZEN

    number: int = Field(ge=1)
    regions: tuple[str, ...] = ()
    rationale: str | None = None
    diff: str = ""
    train: OptimizeScore | None = None
    holdout: OptimizeScore | None = None
    #: Held-out pairs the candidate passed and the seed failed, and the other way round.
    gained: int | None = None
    lost: int | None = None
    p_value: float | None = None
    must_pass_failed: tuple[str, ...] = ()
    accepted: bool = False
    cost_micro: int = Field(default=0, ge=0)
    note: str | None = None


class OptimizeReport(BaseModel):
    """Everything an optimisation found. ``accepted`` is the number of the accepted candidate
    (None: none beat the seed), ``out`` the file its text was written to, ``diff`` its unified
    diff against the prompt file. ``stopped`` says why the loop ended. ``model_dump_json()`` is
    the ``--json`` form; with offline profiles two runs with the same seed give the same report."""

    model_config = _FROZEN

    version: int = OPTIMIZE_REPORT_VERSION
    prompt: str
    profile: str | None = None
    optimizer_profile: str | None = None
    seed: int
    holdout: float
    repeat: int
    train_cases: tuple[str, ...]
    holdout_cases: tuple[str, ...]
    seed_train: OptimizeScore
    seed_holdout: OptimizeScore | None = None
    candidates: tuple[CandidateReport, ...] = ()
    accepted: int | None = None
    out: str | None = None
    diff: str | None = None
    cost_micro: int = Field(default=0, ge=0)
    budget_micro: int | None = None
    stopped: Literal["max_candidates", "budget", "nothing_to_improve"]
    message: str

    @property
    def ok(self) -> bool:
        """Whether a candidate was accepted (exit 0)."""
        return self.accepted is not None


class Evaluate(Protocol):
    """Runs the cases named on the prompt text given (the whole file) and reports them; raises
    ``PromptLoadError`` when that text is not a valid prompt."""

    def __call__(self, text: str, cases: Sequence[str], /) -> TestReport: ...


class Propose(Protocol):
    """Runs the bundled optimiser prompt with these inputs; the result, or the error it raised."""

    def __call__(self, inputs: dict[str, Any], /) -> RunResult | ScriptoriumError: ...


def split_cases(names: Sequence[str], holdout: float, seed: int) -> tuple[list[str], list[str]]:
    """``(train, held-out)``: the case names shuffled by ``seed``, the first
    ``ceil(holdout * n)`` held out; each part keeps the file's order. ``InvalidRequestError``
    when fewer than :data:`MIN_HOLDOUT` would be held out or none would be left to train on."""
    if not 0 < holdout < 1:
        raise InvalidRequestError("--holdout must be between 0 and 1", field="holdout")
    count = math.ceil(holdout * len(names) - 1e-9)
    if count < MIN_HOLDOUT or len(names) - count < 1:
        raise InvalidRequestError(
            f"{len(names)} test cases cannot be split with --holdout {holdout}: optimize holds "
            f"out at least {MIN_HOLDOUT} cases and trains on at least 1 (add cases, or raise "
            "--holdout)",
            field="holdout",
        )
    shuffled = list(names)
    random.Random(seed).shuffle(shuffled)
    held = set(shuffled[:count])
    return [n for n in names if n not in held], [n for n in names if n in held]


@dataclass
class _Version:
    """A version of the prompt on the way: its region texts, file text and train report."""

    regions: tuple[str, ...]
    text: str
    report: TestReport
    score: OptimizeScore


@dataclass
class Optimization:
    """One optimisation of ``prompt_id`` (see the module doc). ``text`` is the prompt file's
    text, ``regions`` its marked regions, ``tests`` its tests file."""

    prompt_id: str
    text: str
    regions: Sequence[Region]
    tests: TestsFile
    evaluate: Evaluate
    propose: Propose
    seed: int = 0
    holdout: float = 0.3
    repeat: int = 1
    max_candidates: int = 3
    budget_micro: int | None = None
    profile: str | None = None
    optimizer_profile: str | None = None
    #: What the diff names the two files.
    prompt_path: str = ""
    out_path: str = ""
    on_step: Callable[[str], None] = field(default=lambda _: None)

    def run(self) -> tuple[OptimizeReport, str | None]:
        """The report, and the accepted candidate's file text (None when none was)."""
        names = [case.name for case in self.tests.cases]
        train, held = split_cases(names, self.holdout, self.seed)
        must_pass = frozenset(c.name for c in self.tests.cases if _must_pass(c))
        self._spent = 0
        self._costs: dict[str, int] = {}
        seed_regions = tuple(r.text for r in self.regions)
        self.on_step("seed on train")
        seed = self._version(seed_regions, self.text, train, "train")
        best = seed
        seed_held: tuple[TestReport, OptimizeScore] | None = None
        candidates: list[CandidateReport] = []
        stopped: Literal["max_candidates", "budget", "nothing_to_improve"] = "max_candidates"
        accepted: tuple[CandidateReport, str] | None = None
        while len(candidates) < self.max_candidates:
            if not _failing(best.report):
                stopped = "nothing_to_improve"
                break
            if not self._affordable("propose"):
                stopped = "budget"
                break
            number = len(candidates) + 1
            self.on_step(f"candidate {number}: proposing")
            proposal, cost, note, rationale = self._proposal(best, candidates, seed_regions)
            if proposal is None:
                candidates.append(
                    CandidateReport(number=number, rationale=rationale, cost_micro=cost, note=note)
                )
                continue
            text = replace_regions(self.text, self.regions, proposal)
            # Every report of this candidate names its number, text, rationale and diff.
            report_of = functools.partial(
                CandidateReport,
                number=number,
                regions=proposal,
                rationale=rationale,
                diff=self._diff(text),
            )
            if not self._affordable("train"):
                candidates.append(
                    report_of(
                        cost_micro=cost,
                        note="not run: its train cases would pass the budget",
                    )
                )
                stopped = "budget"
                break
            self.on_step(f"candidate {number}: train")
            try:
                version = self._version(proposal, text, train, "train")
            except ScriptoriumError as err:
                candidates.append(
                    report_of(
                        cost_micro=cost,
                        note=f"not run: the candidate is not a valid prompt ({err.code})",
                    )
                )
                continue
            cost += version.score.cost_micro
            failed_must = _must_pass_failed(version.report, must_pass)
            best_train = max(
                [seed.score.passed, *(c.train.passed for c in candidates if c.holdout and c.train)]
            )
            if version.score.passed <= best_train or failed_must:
                why = (
                    f"must_pass cases failed on train: {', '.join(failed_must)}"
                    if failed_must
                    else "not better on train than the seed"
                    + (" and the candidates before it" if best_train > seed.score.passed else "")
                )
                candidates.append(
                    report_of(
                        train=version.score,
                        must_pass_failed=failed_must,
                        cost_micro=cost,
                        note=why,
                    )
                )
                if version.score.passed > best.score.passed:
                    best = version
                continue
            best = version
            if seed_held is None:
                if not self._affordable("holdout"):
                    candidates.append(
                        report_of(
                            train=version.score,
                            cost_micro=cost,
                            note="not run on held-out: the seed's held-out runs would pass "
                            "the budget",
                        )
                    )
                    stopped = "budget"
                    break
                self.on_step("seed on held-out")
                seed_report = self.evaluate(self.text, held)
                seed_held = (seed_report, self._score(seed_report, "holdout"))
            if not self._affordable("holdout"):
                candidates.append(
                    report_of(
                        train=version.score,
                        cost_micro=cost,
                        note="not run on held-out: it would pass the budget",
                    )
                )
                stopped = "budget"
                break
            self.on_step(f"candidate {number}: held-out")
            held_report = self.evaluate(text, held)
            held_score = self._score(held_report, "holdout")
            cost += held_score.cost_micro
            gained, lost = _discordant(_pairs(seed_held[0]), _pairs(held_report))
            p_value = mcnemar_exact(gained, lost, alternative="greater")
            failed_must = _must_pass_failed(held_report, must_pass)
            ok = gained > lost and p_value < ALPHA and not failed_must
            if ok:
                note = f"accepted: {gained} pairs gained, {lost} lost, p = {p_value:.4g}"
            elif failed_must:
                note = f"must_pass cases failed on held-out: {', '.join(failed_must)}"
            else:
                note = (
                    f"not accepted: {gained} pairs gained, {lost} lost on held-out, "
                    f"p = {p_value:.4g} (needs p < {ALPHA})"
                )
            judged = report_of(
                train=version.score,
                holdout=held_score,
                gained=gained,
                lost=lost,
                p_value=p_value,
                must_pass_failed=failed_must,
                accepted=ok,
                cost_micro=cost,
                note=note,
            )
            candidates.append(judged)
            if ok and (accepted is None or _better(judged, accepted[0])):
                accepted = (judged, text)
        chosen = None if accepted is None else accepted[0].number
        final = tuple(
            c.model_copy(update={"accepted": c.number == chosen}) if c.accepted else c
            for c in candidates
        )
        report = OptimizeReport(
            prompt=self.prompt_id,
            profile=self.profile or _profile_of(seed.report),
            optimizer_profile=self.optimizer_profile,
            seed=self.seed,
            holdout=self.holdout,
            repeat=self.repeat,
            train_cases=tuple(train),
            holdout_cases=tuple(held),
            seed_train=seed.score,
            seed_holdout=None if seed_held is None else seed_held[1],
            candidates=final,
            accepted=chosen,
            out=self.out_path if accepted is not None else None,
            diff=None if accepted is None else accepted[0].diff,
            cost_micro=self._spent,
            budget_micro=self.budget_micro,
            stopped=stopped,
            message=_message(stopped, accepted is not None, len(final)),
        )
        return report, None if accepted is None else accepted[1]

    # -- steps ---------------------------------------------------------------------------------

    def _version(
        self, regions: tuple[str, ...], text: str, cases: Sequence[str], kind: str
    ) -> _Version:
        report = self.evaluate(text, cases)
        return _Version(regions, text, report, self._score(report, kind))

    def _score(self, report: TestReport, kind: str) -> OptimizeScore:
        cost = report.cost_micro + report.judge_cost_micro
        self._spent += cost
        self._costs.setdefault(kind, cost)
        passed = sum(c.passed for c in report.all_cases())
        failed = sum(c.failed for c in report.all_cases())
        scored = passed + failed
        return OptimizeScore(
            passed=passed,
            failed=failed,
            scored=scored,
            pass_rate=None if scored == 0 else passed / scored,
            cost_micro=cost,
        )

    def _affordable(self, kind: str) -> bool:
        """Whether a step of ``kind`` fits what is left of the budget, estimated by what the
        first step of that kind cost (held-out from train, scaled, before one ran)."""
        if self.budget_micro is None:
            return True
        estimate = self._costs.get(kind)
        if estimate is None and kind == "holdout" and "train" in self._costs:
            estimate = self._costs["train"]
        return self._spent + (estimate or 0) <= self.budget_micro

    def _proposal(
        self, best: _Version, candidates: Sequence[CandidateReport], seed: tuple[str, ...]
    ) -> tuple[tuple[str, ...] | None, int, str | None, str | None]:
        """``(new region texts, cost, note, rationale)``; the texts are None when the proposal
        cannot be run (the optimiser failed, answered the wrong number of regions, or proposed
        a text already tried)."""
        inputs: dict[str, Any] = {
            "prompt_id": self.prompt_id,
            "template": best.text,
            "regions": list(best.regions),
            "failures": _failures(best.report, self.tests),
        }
        history = _history(candidates)
        if history:
            inputs["history"] = history
        outcome = self.propose(inputs)
        cost = _cost_of(outcome)
        self._spent += cost
        self._costs.setdefault("propose", cost)
        if isinstance(outcome, ScriptoriumError):
            return (
                None,
                cost,
                f"the optimiser's run failed: {outcome.code}: {outcome.message}",
                None,
            )
        value = outcome.validation.value if outcome.validation.valid else None
        if not isinstance(value, dict):
            return None, cost, "the optimiser's answer was not a valid proposal", None
        rationale = value.get("rationale") if isinstance(value.get("rationale"), str) else None
        regions = value.get("regions")
        if not isinstance(regions, list) or not all(isinstance(r, str) for r in regions):
            return None, cost, "the optimiser's answer was not a valid proposal", rationale
        if len(regions) != len(self.regions):
            return (
                None,
                cost,
                f"the optimiser answered {len(regions)} regions for {len(self.regions)}",
                rationale,
            )
        proposal = tuple(regions)
        if proposal == seed:
            return None, cost, "the same text as the prompt: nothing to try", rationale
        for earlier in candidates:
            if earlier.regions == proposal:
                return None, cost, f"the same text as candidate {earlier.number}", rationale
        return proposal, cost, None, rationale

    def _diff(self, text: str) -> str:
        return "".join(
            difflib.unified_diff(
                self.text.splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=self.prompt_path,
                tofile=self.out_path,
            )
        )


def _must_pass(case: object) -> bool:
    return bool(getattr(case, "must_pass", False))


def _pairs(report: TestReport) -> dict[tuple[str, int], bool | None]:
    return {
        (case.case, outcome.repeat): outcome.score
        for case in report.all_cases()
        for outcome in case.outcomes
    }


def _discordant(before: Pairs, after: Pairs) -> tuple[int, int]:
    """Pairs scored on both sides that the new version passed and the old failed, and the
    other way round."""
    gained = lost = 0
    for key, old in before.items():
        new = after.get(key)
        if old is None or new is None or old == new:
            continue
        if new:
            gained += 1
        else:
            lost += 1
    return gained, lost


def _must_pass_failed(report: TestReport, must_pass: frozenset[str]) -> tuple[str, ...]:
    return tuple(
        sorted({c.case for c in report.all_cases() if c.case in must_pass and c.status != "passed"})
    )


def _failing(report: TestReport) -> list[CaseReport]:
    return [c for c in report.all_cases() if c.failed > 0]


def _better(one: CandidateReport, other: CandidateReport) -> bool:
    a = (one.holdout.passed if one.holdout else 0, -(one.p_value or 1.0))
    b = (other.holdout.passed if other.holdout else 0, -(other.p_value or 1.0))
    return a > b


def _cost_of(outcome: RunResult | ScriptoriumError) -> int:
    usage = getattr(outcome, "usage", None)
    cost = getattr(usage, "cost_micro", None)
    if cost is None and isinstance(usage, Mapping):
        cost = usage.get("cost_micro")
    return cost if isinstance(cost, int) and cost > 0 else 0


def _profile_of(report: TestReport) -> str | None:
    return report.groups[0].profile if report.groups else None


def _shown(value: object) -> str:
    text = value if isinstance(value, str) else canonical_json(value).decode("utf-8")
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + " [cut]"


def _failures(report: TestReport, tests: TestsFile) -> str:
    """The failing train cases as the optimiser reads them: each case's inputs in brief, and each
    distinct failed expectation once, with what was expected and what came back."""
    inputs = {case.name: case.inputs for case in tests.cases}
    lines: list[str] = []
    for case in _failing(report)[:_FAILING_CASES_SHOWN]:
        lines.append(f'case "{case.case}": failed {case.failed} of {case.repeats} runs')
        if inputs.get(case.case):
            lines.append(f"  inputs: {_shown(inputs[case.case])}")
        seen: set[str] = set()
        for outcome in case.outcomes:
            for failure in outcome.failures:
                if failure.expectation == "judge":
                    line = f"  - judge: {_shown(failure.seen or failure.message)}"
                else:
                    line = (
                        f"  - {failure.expectation}: expected {_shown(failure.expected)}; "
                        f"came back {_shown(failure.seen)}"
                    )
                if line not in seen:
                    seen.add(line)
                    lines.append(line)
            if outcome.error is not None:
                line = f"  - the run failed: {outcome.error.code}"
                if line not in seen:
                    seen.add(line)
                    lines.append(line)
    hidden = len(_failing(report)) - _FAILING_CASES_SHOWN
    if hidden > 0:
        lines.append(f"(and {hidden} more failing cases)")
    return "\n".join(lines)


def _history(candidates: Sequence[CandidateReport]) -> str:
    lines = []
    for candidate in candidates:
        if not candidate.regions:
            continue
        score = (
            f"{candidate.train.passed} of {candidate.train.scored} train runs passed"
            if candidate.train
            else "not run"
        )
        texts = " | ".join(_shown(r) for r in candidate.regions)
        lines.append(f"attempt {candidate.number} ({score}): {texts}")
    return "\n".join(lines)


def _message(stopped: str, accepted: bool, count: int) -> str:
    why = {
        "max_candidates": f"after {count} candidate{'s' if count != 1 else ''}",
        "budget": "the budget would be passed by the next step",
        "nothing_to_improve": "the best version passes every train case",
    }[stopped]
    if accepted:
        return f"a candidate beat the seed on held-out; stopped: {why}"
    return f"no candidate beat the seed; stopped: {why}"


class VersionPrompts:
    """A prompt repository serving one version of a prompt under its id (a candidate's text,
    parsed like the file), the bundled optimiser prompt under :data:`OPTIMIZER_PROMPT_ID`, and
    the project's prompts for every other id."""

    def __init__(self, inner: Repository, prompt_id: str, version: PromptDefinition | None) -> None:
        self._inner = inner
        self._id = prompt_id
        self._version = version

    def get(self, prompt_id: str) -> PromptDefinition:
        """The version for its id, the optimiser for its id, else the project's prompt."""
        if prompt_id == self._id and self._version is not None:
            return self._version
        if prompt_id == OPTIMIZER_PROMPT_ID:
            return optimizer_definition()
        return self._inner.get(prompt_id)

    def list(self) -> list[str]:
        """The project's prompt ids."""
        return self._inner.list()


def optimizer_definition() -> PromptDefinition:
    """The bundled optimiser prompt (read and parsed once)."""
    return bundled_prompt(OPTIMIZER_FILE, OPTIMIZER_PROMPT_ID)


def write_new_file(path: Path, text: str) -> None:
    """Create ``path`` with ``text``, never replacing anything: a name that is taken (a file, a
    directory, a symbolic link, dangling or not) is refused with ``InvalidRequestError`` naming
    it. Missing parent directories are created."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = create_exclusive(path)
    except SideFileTaken as err:
        raise InvalidRequestError(
            f"{path} already exists; optimize never replaces a file (choose another --out)",
            field="out",
        ) from err
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
        out.write(text)
