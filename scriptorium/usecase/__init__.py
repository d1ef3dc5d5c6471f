"""The use case: the Runner orchestrating prompts, profiles, artifacts, rendering, the LLM and
validation through their ports, plus its request/result types and the repair port."""

from scriptorium.usecase.model import (
    ArtifactRecord,
    AttemptRecord,
    OutputRecord,
    Overrides,
    PreparedRun,
    RunRequest,
    RunResult,
)
from scriptorium.usecase.repair import (
    DefaultOutputRepairer,
    OutputRepairer,
    RepairContext,
    RepairResult,
)
from scriptorium.usecase.runner import Runner

__all__ = [
    "ArtifactRecord",
    "AttemptRecord",
    "DefaultOutputRepairer",
    "OutputRecord",
    "OutputRepairer",
    "Overrides",
    "PreparedRun",
    "RepairContext",
    "RepairResult",
    "RunRequest",
    "RunResult",
    "Runner",
]
