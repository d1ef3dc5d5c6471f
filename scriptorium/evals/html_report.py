"""``scriptorium test --html FILE``: the report as one self-contained HTML page.

No script, no network, no external style: the page is one file that opens from disk in any
browser, with scripts off too. The totals come first (and, with ``--against``, the comparison:
passes, cost and p50 latency before and after, the paired test); then per prompt a matrix of
cases x profiles (x versions: before and after side by side), each cell its outcome, pass rate
with its 95 % interval, cost and p50 latency. A cell is an HTML ``details``: opened, it shows
each repeat's output, the expectations and what failed (and, for a changed case, how the output
changed). Every piece of text from the report is HTML-escaped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from html import escape
from typing import Any

from scriptorium._sidefiles import write_replacing
from scriptorium.evals.report import (
    CaseChange,
    CaseReport,
    GroupReport,
    Interval,
    OutputDiff,
    RepeatOutcome,
    TestReport,
    VersionComparison,
)

__all__ = ["html_report", "write_html"]

_STYLE = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5rem;color:#1b1f24;
background:#fff}
h1{font-size:1.4rem;margin:0 0 .8rem}h2{font-size:1.1rem;margin:1.6rem 0 .5rem}
table{border-collapse:collapse;margin:.3rem 0 1rem}
th,td{border:1px solid #c9ced6;padding:.35rem .5rem;vertical-align:top;text-align:left}
th{background:#eef1f5}
.totals td,.totals th{font-variant-numeric:tabular-nums}
td.cell{min-width:14rem}
td.passed{background:#dcf5e3}td.failed{background:#fbdcdc}td.error{background:#fdf0cc}
td.missing{background:#f4f4f4;color:#666}
.badge{display:inline-block;font-weight:700;padding:0 .35rem;border-radius:3px;margin-right:.3rem}
.passed .badge,.badge.fixed{background:#1a7f37;color:#fff}
.failed .badge,.badge.regressed,.badge.worse{background:#cf222e;color:#fff}
.error .badge{background:#9a6700;color:#fff}.badge.same{background:#57606a;color:#fff}
.badge.ok{background:#1a7f37;color:#fff}
summary{cursor:pointer}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;border:1px solid #d0d7de;
padding:.4rem;margin:.3rem 0;max-height:24rem;overflow:auto;font-size:12px}
.figures{color:#424a53;font-size:12px}
ul{margin:.2rem 0;padding-left:1.2rem}
"""

_LABEL = {"passed": "PASS", "failed": "FAIL", "error": "ERROR"}


def _e(value: Any) -> str:
    text = value if isinstance(value, str) else _json(value)
    return escape(text, quote=True)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


def _usd(micro: int) -> str:
    return f"${micro / 1_000_000:.6f}"


def _percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.0%}"


def _interval(interval: Interval | None) -> str:
    return "" if interval is None else f" [{interval.low:.0%}\u2013{interval.high:.0%}]"


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f} ms"


def _row(cells: Iterable[tuple[str, str]]) -> str:
    return "<tr>" + "".join(f"<th>{_e(k)}</th><td>{_e(v)}</td>" for k, v in cells) + "</tr>"


def _totals(report: TestReport) -> str:
    verdict = "ok" if report.ok else "worse"
    started = "" if report.started_at is None else f" started {report.started_at.isoformat()}"
    first = [
        ("cases", str(report.cases)),
        ("passed", str(report.cases_passed)),
        ("failed", str(report.cases_failed)),
        ("judge errors", str(report.cases_errored)),
    ]
    second = [
        ("runs", str(report.repeats)),
        ("cost", _usd(report.cost_micro)),
        ("judges' cost", _usd(report.judge_cost_micro)),
        ("duration", f"{report.duration_ms / 1000:.1f} s"),
    ]
    return (
        f'<p>Result: <span class="badge {verdict}">{"OK" if report.ok else "FAILED"}</span>'
        f"{_e(started)}</p>"
        f'<table class="totals" id="totals">{_row(first)}{_row(second)}</table>'
    )


def _comparison(comparison: VersionComparison) -> str:
    against = comparison.against + (f" ({comparison.revision[:12]})" if comparison.revision else "")
    verdict = (
        "worse" if comparison.worse else "regressed" if comparison.must_pass_regressed else "ok"
    )
    said = {
        "worse": "the candidate is worse (p < 0.05)",
        "regressed": "a must_pass case regressed",
        "ok": "not worse at the 0.05 level",
    }[verdict]
    rows = [
        (
            "passes (case x repeat)",
            f"{comparison.passed_before}/{comparison.scored_before}",
            f"{comparison.passed_after}/{comparison.scored_after}",
        ),
        ("cases passed", str(comparison.cases_passed_before), str(comparison.cases_passed_after)),
        ("cost", _usd(comparison.cost_micro_before), _usd(comparison.cost_micro_after)),
        (
            "latency p50",
            _ms(comparison.latency_p50_ms_before),
            _ms(comparison.latency_p50_ms_after),
        ),
    ]
    body = "".join(
        f"<tr><th>{_e(name)}</th><td>{_e(old)}</td><td>{_e(new)}</td></tr>"
        for name, old, new in rows
    )
    must = ""
    if comparison.must_pass_regressed:
        must = (
            "<p>must_pass cases that regressed:</p><ul>"
            + "".join(f"<li>{_e(name)}</li>" for name in comparison.must_pass_regressed)
            + "</ul>"
        )
    new = ""
    if comparison.new_cases:
        new = (
            "<p>New cases (no such prompt in the reference):</p><ul>"
            + "".join(f"<li>{_e(name)}</li>" for name in comparison.new_cases)
            + "</ul>"
        )
    return (
        f'<section id="comparison"><h2>Against {_e(against)}</h2>'
        f'<p><span class="badge {verdict}">{verdict.upper()}</span>{_e(said)}: '
        f"{comparison.fixed} fixed, {comparison.regressed} regressed, {comparison.same} same; "
        f"McNemar exact test over {comparison.fixed_pairs + comparison.regressed_pairs} "
        f"discordant pairs ({comparison.fixed_pairs} fixed, {comparison.regressed_pairs} "
        f"regressed): p = {comparison.p_value:.4g}</p>"
        f'<table class="totals"><tr><th></th><th>before</th><th>after</th></tr>{body}</table>'
        f"{must}{new}</section>"
    )


def _outcome(outcome: RepeatOutcome) -> str:
    figures: list[str] = [outcome.status]
    if outcome.latency_ms is not None:
        figures.append(_ms(outcome.latency_ms))
    figures.append(_usd(outcome.cost_micro))
    parts = [f"<li><b>repeat {outcome.repeat}</b>: {_e(', '.join(figures))}"]
    if outcome.failures:
        parts.append("<ul>")
        for failure in outcome.failures:
            line = f"<b>{_e(failure.expectation)}</b>: {_e(failure.message)}"
            if failure.expected is not None:
                line += f"<br>expected: <code>{_e(_shown(failure.expected))}</code>"
            if failure.seen is not None:
                line += f"<br>seen: <code>{_e(_shown(failure.seen))}</code>"
            parts.append(f'<li class="failure">{line}</li>')
        parts.append("</ul>")
    judge = outcome.judge
    if judge is not None:
        if judge.error is not None:
            parts.append(
                f"<div>judge ({_e(judge.profile)}) error: {_e(judge.error.code)}: "
                f"{_e(judge.error.message)}</div>"
            )
        elif judge.reason is not None:
            parts.append(f"<div>judge ({_e(judge.profile)}): {_e(judge.reason)}</div>")
    if outcome.output is not None:
        parts.append(f'<pre class="output">{_e(outcome.output)}</pre>')
    parts.append("</li>")
    return "".join(parts)


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 2000 else text[:2000] + "..."


def _diff(diff: OutputDiff) -> str:
    what = "value diff (JSON Pointer)" if diff.kind == "value" else "text diff"
    return (
        f'<div class="diff"><b>{_e(what)}, repeat {diff.repeat}</b>'
        f"<pre>{_e(chr(10).join(diff.lines) or '(no difference in the output)')}</pre></div>"
    )


def _cell(case: CaseReport | None, *, version: str = "", change: CaseChange | None = None) -> str:
    if case is None:
        return '<td class="cell missing">not run</td>'
    badge = f'<span class="badge">{_LABEL[case.status]}</span>'
    if change is not None:
        badge += f'<span class="badge {change.change}">{_e(change.change)}</span>'
    if case.must_pass:
        badge += '<span class="figures">must_pass </span>'
    summary = (
        f"{badge}{case.passed}/{case.scored} ({_percent(case.pass_rate)}"
        f"{_interval(case.interval)})"
        f'<br><span class="figures">{_e(_usd(case.cost_micro))} \u00b7 p50 '
        f"{_e(_ms(case.latency_p50_ms))}"
        + (f" \u00b7 {case.judge_errors} judge errors" if case.judge_errors else "")
        + "</span>"
    )
    expect = (
        f"<div>expects:</div><pre>{_e(_json(case.expect))}</pre>"
        if case.expect
        else "<div>expects nothing but a run</div>"
    )
    body = [
        f"<div>needs a pass rate of {case.min_pass_rate:.0%}</div>",
        expect,
    ]
    if change is not None and change.diff is not None:
        body.append(_diff(change.diff))
    body.append("<ol>" + "".join(_outcome(o) for o in case.outcomes) + "</ol>")
    label = f"{case.prompt} / {case.case} / {case.profile}" + (f" / {version}" if version else "")
    return (
        f'<td class="cell {case.status}" data-outcome="{case.status}" '
        f'data-case="{_e(case.case)}" data-profile="{_e(case.profile)}"'
        + (f' data-version="{version}"' if version else "")
        + f' title="{_e(label)}"><details><summary>{summary}</summary>'
        + f"{''.join(body)}</details></td>"
    )


def _matrix(
    prompt: str,
    groups: list[GroupReport],
    before: dict[tuple[str, str, str], CaseReport] | None,
    changes: dict[tuple[str, str, str], CaseChange],
) -> str:
    profiles = [group.profile for group in groups]
    names: list[str] = []
    for group in groups:
        names.extend(c.case for c in group.cases if c.case not in names)
    by_key = {c.key: c for group in groups for c in group.cases}
    head = "<tr><th>case</th>"
    if before is None:
        head += "".join(f"<th>{_e(p)}</th>" for p in profiles) + "</tr>"
    else:
        head += "".join(f"<th>{_e(p)} before</th><th>{_e(p)} after</th>" for p in profiles)
        head += "</tr>"
    rows = []
    for name in names:
        cells = [f"<th>{_e(name)}</th>"]
        for profile in profiles:
            key = (prompt, profile, name)
            if before is None:
                cells.append(_cell(by_key.get(key)))
            else:
                cells.append(_cell(before.get(key), version="before"))
                cells.append(_cell(by_key.get(key), version="after", change=changes.get(key)))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    figures = "; ".join(
        f"{g.profile}: {g.cases_passed}/{len(g.cases)} cases, {g.passed}/{g.scored} runs "
        f"({_percent(g.pass_rate)}{_interval(g.interval)}), {_usd(g.cost_micro)}, p50 "
        f"{_ms(g.latency_p50_ms)}"
        for g in groups
    )
    return (
        f'<section class="prompt"><h2>{_e(prompt)}</h2><p class="figures">{_e(figures)}</p>'
        f'<table class="matrix" data-prompt="{_e(prompt)}">{head}{"".join(rows)}</table></section>'
    )


def html_report(report: TestReport) -> str:
    """The report as one self-contained HTML document (see the module docstring)."""
    comparison = report.comparison
    before: dict[tuple[str, str, str], CaseReport] | None = None
    changes: dict[tuple[str, str, str], CaseChange] = {}
    if comparison is not None:
        old = comparison.before
        before = {} if old is None else {c.key: c for c in old.all_cases()}
        changes = {(c.prompt, c.profile, c.case): c for c in comparison.cases}
    by_prompt: dict[str, list[GroupReport]] = {}
    for group in report.groups:
        by_prompt.setdefault(group.prompt, []).append(group)
    sections = [_matrix(p, groups, before, changes) for p, groups in by_prompt.items()]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        f"<title>scriptorium test report</title><style>{_STYLE}</style></head><body>"
        "<h1>scriptorium test report</h1>"
        + _totals(report)
        + ("" if comparison is None else _comparison(comparison))
        + "".join(sections)
        + "</body></html>\n"
    )


def write_html(report: TestReport, path: str | os.PathLike[str]) -> None:
    """Write :func:`html_report` to ``path`` (its missing parent folders created), whole."""
    write_replacing(path, html_report(report).encode("utf-8"), make_parents=True)
