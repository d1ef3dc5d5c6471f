"""The use case: the Runner orchestrating prompts, profiles, artifacts, rendering, the LLM and
validation through their ports, plus its request/result types and the repair port."""

from scriptorium.usecase.events import (
    AttemptStarted,
    Done,
    PartialValue,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
)
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
from scriptorium.usecase.stream import AsyncRunStream, RunStream

__all__ = [
    "ArtifactRecord",
    "AsyncRunStream",
    "AttemptRecord",
    "AttemptStarted",
    "DefaultOutputRepairer",
    "Done",
    "OutputRecord",
    "OutputRepairer",
    "Overrides",
    "PartialValue",
    "PreparedRun",
    "ReasoningDelta",
    "RepairContext",
    "RepairResult",
    "RunRequest",
    "RunResult",
    "RunStream",
    "Runner",
    "StreamEvent",
    "TextDelta",
]
