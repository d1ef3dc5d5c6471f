"""``scriptorium test``: test cases beside each prompt (``prompts/<id>.tests.yaml``), run on one
or more profiles with repeats, judged by their expectations (and an LLM judge where a case asks),
reported with honest statistics.

Modules: ``model`` (the tests-file format), ``parse`` and ``files`` (reading it), ``expect``
(checking one result), ``judge`` (the bundled judge prompt), ``stats`` (pure statistics),
``report`` (:class:`TestReport` and its parts), ``score`` (outcomes to reports), ``suite`` (running
the matrix), ``baseline`` (regressions), ``junit`` (JUnit XML), ``cassettes`` (``--record`` /
``--replay``), ``rows`` (progress from the executor), ``pytest_plugin``; ``regions``, ``optimize`` and
``bundled`` for ``scriptorium optimize``. Names load on first use.
"""

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr

if TYPE_CHECKING:
    from scriptorium.evals.model import Case, Expect, JudgeSpec, TestsFile, TextArtifact
    from scriptorium.evals.optimize import CandidateReport, OptimizeReport, OptimizeScore
    from scriptorium.evals.report import (
        BaselineComparison,
        CaseComparison,
        CaseReport,
        ExpectationFailure,
        GroupReport,
        Interval,
        JudgeVerdict,
        RepeatOutcome,
        RunError,
        TestReport,
    )

__all__ = [
    "BaselineComparison",
    "CandidateReport",
    "Case",
    "CaseComparison",
    "CaseReport",
    "Expect",
    "ExpectationFailure",
    "GroupReport",
    "Interval",
    "JudgeSpec",
    "JudgeVerdict",
    "OptimizeReport",
    "OptimizeScore",
    "RepeatOutcome",
    "RunError",
    "TestReport",
    "TestsFile",
    "TextArtifact",
]

__getattr__ = lazy_getattr(
    __name__,
    {
        "Case": "model",
        "Expect": "model",
        "JudgeSpec": "model",
        "TestsFile": "model",
        "TextArtifact": "model",
        "CandidateReport": "optimize",
        "OptimizeReport": "optimize",
        "OptimizeScore": "optimize",
        "BaselineComparison": "report",
        "CaseComparison": "report",
        "CaseReport": "report",
        "ExpectationFailure": "report",
        "GroupReport": "report",
        "Interval": "report",
        "JudgeVerdict": "report",
        "RepeatOutcome": "report",
        "RunError": "report",
        "TestReport": "report",
    },
)
