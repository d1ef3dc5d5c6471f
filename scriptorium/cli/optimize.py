"""``scriptorium optimize``: improve a prompt's marked regions against its tests, print the diff.

Exit 0 when a candidate was accepted (its text written to ``--out``, never over the prompt file),
1 when none beat the seed (one ``optimize_rejected`` line on stderr), 2 for usage and refusals
(no marked region, too few cases to hold out three, an ``--out`` that exists). The report goes to
stdout (``--json``: the whole ``OptimizeReport``); each step is logged on stderr with ``-v``.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scriptorium.cli.output import usd
from scriptorium.cli.test import add_cassette_options

if TYPE_CHECKING:
    from scriptorium.cli.output import Reporter
    from scriptorium.evals.optimize import OptimizeReport

__all__ = ["add_optimize_parser", "cmd_optimize", "format_optimize_report"]

_log = logging.getLogger("scriptorium.cli.optimize")


def add_optimize_parser(commands: Any, common: Callable[..., None]) -> None:
    """The ``optimize`` subcommand's options (``common`` adds ``--root``, ``--json`` and ``-v``)."""
    optimize = commands.add_parser(
        "optimize",
        help="improve a prompt's {# optimize #} regions against its tests; print the diff",
    )
    optimize.add_argument("prompt", metavar="PROMPT", help="the prompt id")
    optimize.add_argument(
        "-p", "--profile", help="run the cases on this profile (default: the tests file's)"
    )
    optimize.add_argument(
        "--optimizer-profile",
        metavar="PROFILE",
        help="run the optimiser prompt on this profile (default: the cases' profile)",
    )
    optimize.add_argument(
        "--budget-micro",
        type=int,
        metavar="N",
        help="stop before a step that would take the cost past N micro-USD (every run counts)",
    )
    optimize.add_argument(
        "--max-candidates",
        type=int,
        default=3,
        metavar="N",
        help="candidates to propose at most (default: 3)",
    )
    optimize.add_argument(
        "--holdout",
        type=float,
        default=0.3,
        metavar="FRACTION",
        help="share of the cases held out to judge candidates (default: 0.3; at least 3 cases)",
    )
    optimize.add_argument(
        "--repeat", type=int, metavar="N", help="runs per case (default: the tests file's)"
    )
    optimize.add_argument(
        "--seed", type=int, default=0, metavar="S", help="the split's seed (default: 0)"
    )
    optimize.add_argument(
        "--out",
        metavar="FILE",
        help="where the accepted prompt goes (default: prompts/<id>.optimized.md; never an "
        "existing file)",
    )
    optimize.add_argument(
        "--concurrency", type=int, default=8, metavar="N", help="runs in flight (default: 8)"
    )
    add_cassette_options(optimize)
    common(optimize, json_help="print the whole OptimizeReport as JSON")


def cmd_optimize(args: argparse.Namespace, reporter: Reporter) -> int:
    """Optimise; print the report and the diff; exit 0 when a candidate was accepted, else 1."""
    from scriptorium.cli.commands import make_engine, require_project

    engine = make_engine(args)
    require_project(engine)
    report = engine.optimize(
        args.prompt,
        profile=args.profile,
        optimizer_profile=args.optimizer_profile,
        budget_micro=args.budget_micro,
        max_candidates=args.max_candidates,
        holdout=args.holdout,
        repeat=args.repeat,
        seed=args.seed,
        out=args.out,
        concurrency=args.concurrency,
        cassettes=args.cassettes,
        on_step=lambda step: _log.info("optimize: %s", step),
    )
    if reporter.json_mode:
        reporter.raw_json(report.model_dump_json())
    else:
        reporter.line(format_optimize_report(report))
    if report.ok:
        return 0
    reporter.error("optimize_rejected", report.message)
    return 1


def _score(score: Any) -> str:
    if score is None:
        return "-"
    return f"{score.passed}/{score.scored}"


def format_optimize_report(report: OptimizeReport) -> str:
    """The text report: the split, the seed, one line per candidate, the total cost, and the
    accepted candidate's diff."""
    lines = [
        f"optimize {report.prompt}"
        + (f" on {report.profile}" if report.profile else "")
        + f": {len(report.train_cases)} train, {len(report.holdout_cases)} held-out cases, "
        f"repeat {report.repeat}, seed {report.seed}",
        f"  seed: train {_score(report.seed_train)}, held-out {_score(report.seed_holdout)}",
    ]
    for c in report.candidates:
        p = "" if c.p_value is None else f", p = {c.p_value:.4g}"
        mark = "ACCEPTED" if c.accepted and c.number == report.accepted else ""
        lines.append(
            f"  candidate {c.number}: train {_score(c.train)}, held-out {_score(c.holdout)}{p}, "
            f"{usd(c.cost_micro)}  {mark or (c.note or '')}".rstrip()
        )
    budget = "" if report.budget_micro is None else f" of {usd(report.budget_micro)}"
    lines.append(f"cost: {usd(report.cost_micro)}{budget}; {report.message}")
    if report.out is not None and report.diff is not None:
        lines.append(f"written: {report.out} (the prompt file is unchanged)")
        lines.append(report.diff.rstrip("\n"))
    return "\n".join(lines)
