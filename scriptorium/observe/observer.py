"""The Observer port: what a run tells whoever watches it (tracing, metrics), and nothing more.

A run asks its observer for a :class:`RunObservation` when it starts, reports the prepared run,
opens one :class:`GenerationObservation` per call to the model (the first generation and each
repair), and ends the observation with the result or the error. Observers watch; they never change
an outcome: every call into them is guarded by the runner, and an observer that raises is logged at
DEBUG and otherwise ignored.

Nothing here imports a tracing library: the OpenTelemetry adapter lives in ``observe.otel`` and is
imported only when it is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from scriptorium.llm.model import LLMRequest, LLMResponse, RetryInfo
    from scriptorium.usecase.model import PreparedRun, RunResult

__all__ = ["GenerationKind", "GenerationObservation", "Observer", "RunObservation"]

#: ``initial``: the run's first call to the model; ``repair``: a repair call; ``batch``: the first
#: generation read from a provider batch's result (made by the provider earlier, not called now).
GenerationKind = Literal["initial", "repair", "batch"]


class GenerationObservation(Protocol):
    """One call to the model, from the request to its response or failure."""

    def retry(self, info: RetryInfo) -> None:
        """A transport retry is about to sleep ``info.delay_s`` after ``info.failure``."""

    def end(self, response: LLMResponse | None, error: BaseException | None) -> None:
        """The call returned ``response``, or failed with ``error`` (exactly one is given)."""


class RunObservation(Protocol):
    """One run, from its start to its result or failure."""

    def prepared(self, prepared: PreparedRun) -> None:
        """Preparation succeeded: the hashes, target and settings are known."""

    def generation(self, kind: GenerationKind, request: LLMRequest) -> GenerationObservation:
        """A call to the model starts (``kind`` says whether it is the first, a repair, or a
        provider batch's answer being read)."""
        ...

    def end(self, result: RunResult | None, error: BaseException | None) -> None:
        """The run produced ``result`` or raised ``error`` (exactly one is given)."""


class Observer(Protocol):
    """Watches runs. ``scriptorium.observe.OTelObserver`` turns them into OpenTelemetry spans and
    metrics; users may write their own (a log line per run, a counter)."""

    def start_run(self, run_id: str, prompt_id: str) -> RunObservation:
        """A run of ``prompt_id`` starts; its observation receives everything after."""
        ...
