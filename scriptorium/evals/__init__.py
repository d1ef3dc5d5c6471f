"""``scriptorium test``: test cases beside each prompt (``prompts/<id>.tests.yaml``), run on one
or more profiles with repeats, judged by their expectations (and an LLM judge where a case asks),
reported with honest statistics.

Modules: ``model`` (the tests-file format), ``parse`` and ``files`` (reading it), ``expect``
(checking one result), ``judge`` (the bundled judge prompt), ``stats`` (pure statistics),
``report`` (:class:`TestReport` and its parts), ``score`` (outcomes to reports), ``suite`` (running
the matrix), ``baseline`` (regressions), ``junit`` (JUnit XML), ``cassettes`` (``--record`` /
``--replay``), ``rows`` (progress from the executor), ``pytest_plugin``, ``dataset`` and
``paths`` (cases from a file), ``reference`` and ``compare`` (``--against``), ``html_report``
(``--html``); ``regions``, ``optimize`` and ``bundled`` for ``scriptorium optimize``. Names
load on first use.
"""

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr

if TYPE_CHECKING:
    from scriptorium.evals.model import (
        Case,
        DatasetSpec,
        Expect,
        JudgeSpec,
        TestsFile,
        TextArtifact,
    )
    from scriptorium.evals.optimize import CandidateReport, OptimizeReport, OptimizeScore
    from scriptorium.evals.report import (
        BaselineComparison,
        CaseChange,
        CaseComparison,
        CaseReport,
        ExpectationFailure,
        GroupReport,
        Interval,
        JudgeVerdict,
        OutputDiff,
        RepeatOutcome,
        RunError,
        TestReport,
        VersionComparison,
    )

__all__ = [
    "BaselineComparison",
    "CandidateReport",
    "Case",
    "CaseChange",
    "CaseComparison",
    "CaseReport",
    "DatasetSpec",
    "Expect",
    "ExpectationFailure",
    "GroupReport",
    "Interval",
    "JudgeSpec",
    "JudgeVerdict",
    "OptimizeReport",
    "OptimizeScore",
    "OutputDiff",
    "RepeatOutcome",
    "RunError",
    "TestReport",
    "TestsFile",
    "TextArtifact",
    "VersionComparison",
]

__getattr__ = lazy_getattr(
    __name__,
    {
        "Case": "model",
        "DatasetSpec": "model",
        "Expect": "model",
        "JudgeSpec": "model",
        "TestsFile": "model",
        "TextArtifact": "model",
        "CandidateReport": "optimize",
        "OptimizeReport": "optimize",
        "OptimizeScore": "optimize",
        "BaselineComparison": "report",
        "CaseChange": "report",
        "CaseComparison": "report",
        "CaseReport": "report",
        "ExpectationFailure": "report",
        "GroupReport": "report",
        "Interval": "report",
        "JudgeVerdict": "report",
        "OutputDiff": "report",
        "RepeatOutcome": "report",
        "RunError": "report",
        "TestReport": "report",
        "VersionComparison": "report",
    },
)
