"""``scriptorium test``: run the test cases beside the prompts and report them.

Exit 0 when every case met its pass rate (every repeat scored) and nothing regressed against
``--baseline``; 1 otherwise (one ``test_failed`` line on stderr); 2 for usage. The report goes to
stdout (``--json``: the whole ``TestReport``); ``--junit FILE`` writes JUnit XML beside it; on a
terminal a progress line on stderr shows the runs done, passing and failing so far, the cost so
far and the time left.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from scriptorium.cli.output import duration, plural, usd
from scriptorium.errors import InvalidRequestError, translate

if TYPE_CHECKING:
    from scriptorium.cli.output import Reporter
    from scriptorium.evals.report import CaseReport, GroupReport, TestReport, VersionComparison
    from scriptorium.evals.suite import Progress

__all__ = ["ProgressLine", "add_test_parser", "cmd_test", "format_report"]

_DETAIL_CHARS = 300
_DIFF_LINES = 20


def add_test_parser(commands: Any, common: Callable[..., None]) -> None:
    """The ``test`` subcommand's options (``common`` adds ``--root``, ``--json`` and ``-v``)."""
    test = commands.add_parser(
        "test",
        help="run the test cases beside the prompts (prompts/<id>.tests.yaml); exit 1 on failures",
    )
    test.add_argument(
        "prompts",
        nargs="*",
        metavar="PROMPT",
        help="prompt ids whose tests to run (default: every prompt with a tests file)",
    )
    test.add_argument(
        "-p",
        "--profile",
        dest="profiles",
        action="append",
        default=[],
        metavar="PROFILE",
        help="run on this profile (repeatable: profiles side by side; default: the tests "
        "file's profile, else the prompt's)",
    )
    test.add_argument(
        "--repeat", type=int, metavar="N", help="runs per case (default: the tests file's)"
    )
    test.add_argument(
        "--concurrency", type=int, default=8, metavar="N", help="runs in flight (default: 8)"
    )
    test.add_argument("--junit", metavar="FILE", help="also write the report as JUnit XML")
    test.add_argument(
        "--html",
        metavar="FILE",
        help="also write the report as one self-contained HTML page (a matrix of cases x "
        "profiles, each cell opening to its outputs and failures)",
    )
    test.add_argument(
        "--against",
        metavar="REF",
        help="also run the same cases on another version (a git revision, read without touching "
        "the working tree, or a directory holding prompts/) and compare: exit 1 when this one is "
        "worse (exact paired test, p < 0.05) or a must_pass case regressed",
    )
    test.add_argument(
        "--baseline",
        metavar="FILE",
        help="an earlier report (--json) to compare with: a case whose pass rate dropped beyond "
        "its 95%% interval is a regression (exit 1)",
    )
    add_cassette_options(test)
    test.add_argument(
        "--provider-batch",
        action="store_true",
        help="send the cases through the provider's batch API (half price, results within 24 h)",
    )
    test.add_argument(
        "--poll-s",
        type=float,
        default=15.0,
        metavar="S",
        help="with --provider-batch: seconds between polls at first (default: 15)",
    )
    common(test, json_help="print the whole TestReport as JSON")


class ProgressLine:
    """The terminal's progress line: runs done of all, passing and failing so far, cost so far,
    and the time left at the pace so far."""

    def __init__(self, stream: IO[str], clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.clock = clock
        self.shown = False
        self._phase_started = clock()
        self._phase = "cases"
        self._done = 0
        self._last_at = self._phase_started

    def show(self, progress: Progress) -> None:
        """Rewrite the line for ``progress``."""
        now = self.clock()
        if progress.phase != self._phase:
            self._phase, self._phase_started = progress.phase, now
        elif progress.done < self._done:
            # A new run (``--against`` runs the suite twice): it began when the last one ended.
            self._phase_started = self._last_at
        self._done, self._last_at = progress.done, now
        elapsed = max(now - self._phase_started, 1e-6)
        left = progress.total - progress.done
        eta = ""
        if progress.done and left > 0:
            eta = f", ETA {duration(left * elapsed / progress.done)}"
        what = "runs" if progress.phase == "cases" else "judged"
        self.stream.write(
            f"\rtest: {progress.done}/{progress.total} {what}, {progress.passing} passing, "
            f"{progress.failing} failing, {usd(progress.cost_micro)} so far{eta} "
        )
        self.stream.flush()
        self.shown = True

    def end(self) -> None:
        """End the line (when one was shown)."""
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def add_cassette_options(command: argparse.ArgumentParser) -> None:
    """``--record`` / ``--replay``: how a command that runs tests cases (``test``,
    ``optimize``) treats replay profiles."""
    cassettes = command.add_mutually_exclusive_group()
    cassettes.add_argument(
        "--record",
        dest="cassettes",
        action="store_const",
        const="record",
        help="run replay profiles live through their record_provider and append every answer "
        "to their cassettes",
    )
    cassettes.add_argument(
        "--replay",
        dest="cassettes",
        action="store_const",
        const="replay",
        help="answer replay profiles from their cassettes only (deterministic, free, no key); "
        "a live profile without a cassette is refused",
    )


def cmd_test(args: argparse.Namespace, reporter: Reporter) -> int:
    """Run the tests; print the report; exit 0 when it is ok, else 1."""
    from scriptorium.cli.commands import make_engine, require_project
    from scriptorium.evals.junit import write_junit

    if args.repeat is not None and args.repeat < 1:
        raise InvalidRequestError("--repeat must be at least 1", field="repeat")
    if args.concurrency < 1:
        raise InvalidRequestError("--concurrency must be at least 1", field="concurrency")
    if args.poll_s <= 0:
        raise InvalidRequestError("--poll-s must be positive", field="poll_s")
    engine = make_engine(args)
    require_project(engine)
    progress = ProgressLine(reporter.err) if reporter.err.isatty() else None
    try:
        report = engine.test(
            args.prompts or None,
            args.profiles or None,
            args.repeat,
            concurrency=args.concurrency,
            cassettes=args.cassettes,
            provider_batch=args.provider_batch,
            poll_s=args.poll_s,
            baseline=args.baseline,
            on_progress=None if progress is None else progress.show,
            against=args.against,
        )
    finally:
        if progress is not None:
            progress.end()
    if args.junit:
        with translate(InvalidRequestError, f"--junit: cannot write {args.junit}", field="junit"):
            Path(args.junit).parent.mkdir(parents=True, exist_ok=True)
            write_junit(report, args.junit)
    if args.html:
        from scriptorium.evals.html_report import write_html

        with translate(InvalidRequestError, f"--html: cannot write {args.html}", field="html"):
            write_html(report, args.html)
    if reporter.json_mode:
        reporter.raw_json(report.model_dump_json())
    else:
        reporter.line(format_report(report))
    if report.ok:
        return 0
    reporter.error("test_failed", _failure_line(report))
    return 1


def _failure_line(report: TestReport) -> str:
    comparison = report.comparison
    if comparison is not None:  # with --against, the exit status is the comparison's
        why = []
        if comparison.worse:
            why.append(
                f"worse than {comparison.against}: {comparison.regressed_pairs} runs regressed, "
                f"{comparison.fixed_pairs} fixed (p = {comparison.p_value:.3g})"
            )
        if comparison.must_pass_regressed:
            why.append("must_pass regressed: " + ", ".join(comparison.must_pass_regressed))
        if report.baseline is not None and report.baseline.regressions:
            why.append(f"{report.baseline.regressions} regressed against the baseline")
        return "; ".join(why) or "the comparison failed"
    parts = []
    if report.cases_failed:
        parts.append(f"{report.cases_failed} of {report.cases} cases did not meet their pass rate")
    if report.cases_errored:
        parts.append(f"{report.cases_errored} left unscored by judge errors")
    if report.baseline is not None and report.baseline.regressions:
        parts.append(f"{report.baseline.regressions} regressed against the baseline")
    return "; ".join(parts) or "the tests did not pass"


def _percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.0%}"


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f} ms"


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS] + "..."


def _group_line(group: GroupReport) -> str:
    interval = (
        ""
        if group.interval is None
        else f" (95% CI {group.interval.low:.0%}-{group.interval.high:.0%})"
    )
    judges = f", judges {usd(group.judge_cost_micro)}" if group.judge_cost_micro else ""
    if group.gateway_cost_micro:
        judges += f", gateway reported {usd(group.gateway_cost_micro)}"
    errors = f", {group.judge_errors} judge errors not scored" if group.judge_errors else ""
    return (
        f"{group.prompt} on {group.profile}: {group.cases_passed}/{len(group.cases)} cases passed; "
        f"repeats {group.passed}/{group.scored} passed{errors}, pass rate "
        f"{_percent(group.pass_rate)}{interval}, pass^k {_percent(group.pass_hat_k)}, "
        f"pass@k {_percent(group.pass_at_k)}; cost {usd(group.cost_micro)}{judges}; "
        f"latency p50 {_ms(group.latency_p50_ms)}, p95 {_ms(group.latency_p95_ms)}"
    )


def _case_lines(case: CaseReport) -> list[str]:
    label = {"passed": "ok   ", "failed": "FAIL ", "error": "ERROR"}[case.status]
    if case.regression:
        label = "REGRESSION" if case.status == "passed" else label + " REGRESSION"
    figures = f"{case.passed}/{case.scored}"
    if case.status != "passed":
        figures += f" (needs {case.min_pass_rate:.0%})"
    if case.judge_errors:
        figures += f", {case.judge_errors} judge errors"
    lines = [f"  {label} {case.case}  {figures}"]
    if case.status == "passed" and not case.regression:
        return lines
    # Each failing expectation once, with how many repeats it failed in (the first repeat's
    # details shown): ten repeats of one mistake are one mistake.
    seen: dict[tuple[str, ...], tuple[list[str], int]] = {}
    for outcome in case.outcomes:
        for failure in outcome.failures:
            detail = [f"{failure.expectation}: {failure.message}"]
            if failure.expected is not None:
                detail.append(f"  expected: {_shown(failure.expected)}")
            if failure.seen is not None:
                detail.append(f"  seen:     {_shown(failure.seen)}")
            _count(seen, ("expect", failure.expectation), detail)
        if outcome.error is not None:
            text = f"run error: {outcome.error.code}: {_shown(outcome.error.message)}"
            _count(seen, ("error", outcome.error.code), [text])
        judge = outcome.judge
        if judge is not None and judge.error is not None:
            text = (
                f"judge error ({judge.profile}): {judge.error.code}: {_shown(judge.error.message)}"
            )
            _count(seen, ("judge", judge.profile, judge.error.code), [text])
    total = len(case.outcomes)
    for detail, times in seen.values():
        lines.append(f"        {detail[0]} ({_repeats(times, total)})")
        lines.extend(f"        {more}" for more in detail[1:])
    return lines


def _comparison_lines(comparison: VersionComparison) -> list[str]:
    """``--against``: each changed case (with how its output changed), then the totals on both
    sides and the paired test."""
    revision = f" ({comparison.revision[:12]})" if comparison.revision else ""
    lines = [
        f"against {comparison.against}{revision}: {comparison.fixed} fixed, "
        f"{comparison.regressed} regressed, {comparison.same} same"
        + (f", {len(comparison.new_cases)} new" if comparison.new_cases else "")
    ]
    for change in comparison.cases:
        if change.change == "same":
            continue
        must = " (must_pass)" if change.must_pass else ""
        lines.append(
            f"  {change.change.upper()}{must} {change.prompt} [{change.profile}] {change.case}: "
            f"{change.before_passed}/{change.before_scored} -> "
            f"{change.after_passed}/{change.after_scored}"
        )
        diff = change.diff
        if diff is not None:
            shown = diff.lines[:_DIFF_LINES]
            lines.extend(f"        {_shown(line)}" for line in shown)
            if len(diff.lines) > len(shown):
                lines.append(f"        ... {len(diff.lines) - len(shown)} more diff lines")
    lines.append(
        f"  runs passed {comparison.passed_before}/{comparison.scored_before} -> "
        f"{comparison.passed_after}/{comparison.scored_after}; cases passed "
        f"{comparison.cases_passed_before} -> {comparison.cases_passed_after}; cost "
        f"{usd(comparison.cost_micro_before)} -> {usd(comparison.cost_micro_after)}; latency p50 "
        f"{_ms(comparison.latency_p50_ms_before)} -> {_ms(comparison.latency_p50_ms_after)}"
    )
    verdict = "WORSE" if comparison.worse else "not worse"
    lines.append(
        f"  paired exact test (McNemar, two-sided): {comparison.fixed_pairs} runs fixed, "
        f"{comparison.regressed_pairs} regressed, p = {comparison.p_value:.4g}: {verdict} at the "
        f"{comparison.alpha:g} level"
    )
    return lines


def _count(
    seen: dict[tuple[str, ...], tuple[list[str], int]], key: tuple[str, ...], detail: list[str]
) -> None:
    first, times = seen.get(key, (detail, 0))
    seen[key] = (first, times + 1)


def _repeats(times: int, total: int) -> str:
    if total == 1:
        return "the only repeat"
    return f"{times} of {total} repeats"


def format_report(report: TestReport) -> str:
    """The report as people read it: a line per prompt and profile, a line per case, the details
    of what failed, the baseline comparison and the totals."""
    lines: list[str] = []
    for group in report.groups:
        lines.append(_group_line(group))
        for case in group.cases:
            lines.extend(_case_lines(case))
    baseline = report.baseline
    if baseline is not None:
        where = f" {baseline.source}" if baseline.source else ""
        lines.append(
            f"baseline{where}: {plural(len(baseline.compared), 'case')} compared, "
            f"{plural(baseline.regressions, 'regression')}"
            + (f", {len(baseline.new_cases)} new" if baseline.new_cases else "")
            + (f", {len(baseline.missing_cases)} not run" if baseline.missing_cases else "")
        )
        if baseline.unmatched:
            held = baseline.held
            lines.append(
                f"  not in the baseline: {', '.join(baseline.unmatched)} (cases match by prompt, "
                "profile and name"
                + (f"; the baseline holds {', '.join(held[:5])}" if held else "; it is empty")
                + ")"
            )
        for item in baseline.compared:
            if item.regression:
                interval = (
                    ""
                    if item.new_interval is None
                    else f" (95% CI {item.new_interval.low:.0%}-{item.new_interval.high:.0%})"
                )
                lines.append(
                    f"  REGRESSION {item.prompt} [{item.profile}] {item.case}: "
                    f"{_percent(item.old_pass_rate)} -> {_percent(item.new_pass_rate)}{interval}"
                )
    if report.comparison is not None:
        lines.extend(_comparison_lines(report.comparison))
    judges = f" (judges {usd(report.judge_cost_micro)} apart)" if report.judge_cost_micro else ""
    if report.gateway_cost_micro:
        judges += f" (gateway reported {usd(report.gateway_cost_micro)})"
    mode = f"; cassettes: {report.cassettes}" if report.cassettes else ""
    batch = "; through provider batches" if report.provider_batch else ""
    lines.append(
        f"total: {plural(report.cases, 'case')}, {report.cases_passed} passed, "
        f"{report.cases_failed} failed, {report.cases_errored} with judge errors; "
        f"{plural(report.repeats, 'run')}; cost "
        f"{usd(report.cost_micro)}{judges}; {report.duration_ms / 1000:.1f} s{mode}{batch}"
    )
    return "\n".join(lines)
