"""The Observer port without OpenTelemetry: what a run reports, in which order, and that an
observer can never change a run's outcome."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from scriptorium.errors import LLMGenerateError, PromptLoadError
from scriptorium.llm.model import LLMRequest, LLMResponse
from scriptorium.llm.retry import RetryInfo
from scriptorium.observe import Observer, observer_from_env
from scriptorium.observe.observer import GenerationKind
from scriptorium.testing import FakeClient
from scriptorium.usecase import RunRequest
from scriptorium.usecase.model import PreparedRun, RunResult
from scriptorium.usecase.repair import DefaultOutputRepairer
from tests.conftest import RunnerFactory


@dataclass
class Journal:
    """Records every observer call as a tuple, in order."""

    events: list[tuple[Any, ...]] = field(default_factory=list)


@dataclass
class _Generation:
    journal: Journal

    def retry(self, info: RetryInfo) -> None:
        self.journal.events.append(("retry", info.attempt))

    def end(self, response: LLMResponse | None, error: BaseException | None) -> None:
        self.journal.events.append(
            ("generation_end", None if response is None else response.text, type(error).__name__)
        )


@dataclass
class _Run:
    journal: Journal

    def prepared(self, prepared: PreparedRun) -> None:
        self.journal.events.append(("prepared", prepared.prompt_id))

    def generation(self, kind: GenerationKind, request: LLMRequest) -> _Generation:
        self.journal.events.append(("generation", kind, request.target.provider))
        return _Generation(self.journal)

    def end(self, result: RunResult | None, error: BaseException | None) -> None:
        valid = None if result is None else result.validation.valid
        self.journal.events.append(("end", valid, type(error).__name__))


@dataclass
class RecordingObserver:
    journal: Journal = field(default_factory=Journal)

    def start_run(self, run_id: str, prompt_id: str) -> _Run:
        self.journal.events.append(("start", run_id, prompt_id))
        return _Run(self.journal)


class BrokenObserver:
    """Raises from every method: runs must go on as if it were not there."""

    def start_run(self, run_id: str, prompt_id: str) -> Any:
        raise RuntimeError("observer is broken")


class HalfBrokenObserver:
    def start_run(self, run_id: str, prompt_id: str) -> Any:
        return self

    def prepared(self, prepared: PreparedRun) -> None:
        raise RuntimeError("broken")

    def generation(self, kind: GenerationKind, request: LLMRequest) -> Any:
        return self

    def retry(self, info: RetryInfo) -> None:
        raise RuntimeError("broken")

    def end(self, *args: Any) -> None:
        raise RuntimeError("broken")


def test_the_recording_observer_satisfies_the_port() -> None:
    observer: Observer = RecordingObserver()
    assert observer is not None


def test_a_run_reports_start_prepared_generation_and_end_in_order(
    make_runner: RunnerFactory,
) -> None:
    observer = RecordingObserver()
    runner = make_runner(client=FakeClient(["Hi!"]), observer=observer)
    result = runner.run(RunRequest(prompt_id="greet", inputs={"name": "Ada"}))
    assert observer.journal.events == [
        ("start", result.run_id, "greet"),
        ("prepared", "greet"),
        ("generation", "initial", "fake"),
        ("generation_end", "Hi!", "NoneType"),
        ("end", True, "NoneType"),
    ]


def test_a_failed_call_ends_the_generation_and_the_run_with_the_error(
    make_runner: RunnerFactory,
) -> None:
    observer = RecordingObserver()
    failing = LLMGenerateError("down", reason="server_error")
    runner = make_runner(client=FakeClient([failing]), observer=observer)
    with pytest.raises(LLMGenerateError):
        runner.run(RunRequest(prompt_id="greet", inputs={"name": "Ada"}))
    assert observer.journal.events[-2:] == [
        ("generation_end", None, "LLMGenerateError"),
        ("end", None, "LLMGenerateError"),
    ]


def test_a_prepare_failure_ends_the_run_without_a_generation(make_runner: RunnerFactory) -> None:
    observer = RecordingObserver()
    runner = make_runner(client=FakeClient(["x"]), observer=observer)
    with pytest.raises(PromptLoadError):
        runner.run(RunRequest(prompt_id="no-such-prompt"))
    assert [e[0] for e in observer.journal.events] == ["start", "end"]
    assert observer.journal.events[-1] == ("end", None, "PromptLoadError")


def test_repairs_are_observed_as_generations_of_kind_repair(make_runner: RunnerFactory) -> None:
    observer = RecordingObserver()
    client = FakeClient(["not json", '{"name": "Ada", "email": "ada@example.org"}'])
    runner = make_runner(client=client, observer=observer, repairer=DefaultOutputRepairer(client))
    result = runner.run(RunRequest(prompt_id="extract/contact", artifacts={"document": "doc.txt"}))
    assert result.validation.repaired
    kinds = [e[1] for e in observer.journal.events if e[0] == "generation"]
    assert kinds == ["initial", "repair"]


@pytest.mark.parametrize("observer", [BrokenObserver(), HalfBrokenObserver()])
def test_an_observer_that_raises_never_changes_the_outcome(
    make_runner: RunnerFactory, observer: Any
) -> None:
    runner = make_runner(client=FakeClient(["Hi!"]), observer=observer)
    request = RunRequest(prompt_id="greet", inputs={"name": "Ada"})
    assert runner.run(request).output.text == "Hi!"
    assert asyncio.run(runner.arun(request)).output.text == "Hi!"


def test_async_runs_report_the_same_sequence(make_runner: RunnerFactory) -> None:
    observer = RecordingObserver()
    runner = make_runner(client=FakeClient(["Hi!"]), observer=observer)
    result = asyncio.run(runner.arun(RunRequest(prompt_id="greet", inputs={"name": "Ada"})))
    assert [e[0] for e in observer.journal.events] == [
        "start",
        "prepared",
        "generation",
        "generation_end",
        "end",
    ]
    assert observer.journal.events[0][1] == result.run_id


def test_observer_from_env_is_off_unless_asked() -> None:
    assert observer_from_env({}) is None
    assert observer_from_env({"SCRIPTORIUM_OTEL": "0"}) is None
    observer = observer_from_env({"SCRIPTORIUM_OTEL": "1"})
    assert type(observer).__name__ == "OTelObserver"


def test_the_cli_traces_runs_when_scriptorium_otel_is_set() -> None:
    """SCRIPTORIUM_OTEL=1 makes the command's Engine report to the global tracer provider."""
    script = textwrap.dedent(
        """
        import os, sys
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        from scriptorium.cli import main
        code = main(["run", "classify/sentiment", "-i", "text=great"])
        print(sorted(s.name for s in exporter.get_finished_spans()), file=sys.stderr)
        sys.exit(code)
        """
    )
    env = {**os.environ, "SCRIPTORIUM_OTEL": "1"}
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "['chat", done.stderr
    assert "'run classify/sentiment'" in done.stderr


def test_the_readme_tracing_example_runs_with_an_in_memory_exporter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The README's OTLP example, with the OTLP exporter swapped for the in-memory one (no
    collector here) and a private tracer provider instead of the global one."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    (example,) = [b for b in readme.split("```python\n") if b.startswith("# needs: a collector")]
    source = example.split("```")[0]
    otlp = "from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter"
    assert otlp in source
    source = source.replace(otlp, "").replace("OTLPSpanExporter()", "exporter")
    source = source.replace("trace.set_tracer_provider(provider)", "")
    source = source.replace("OTelObserver()", "OTelObserver(tracer_provider=provider)")
    source = source.replace("BatchSpanProcessor", "SimpleSpanProcessor")
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    exporter = InMemorySpanExporter()
    namespace: dict[str, Any] = {"exporter": exporter}
    exec(compile(source, "README tracing example", "exec"), namespace)  # noqa: S102
    names = sorted(s.name for s in exporter.get_finished_spans())
    assert names == ["chat offline-demo", "run classify/sentiment"]
