"""Provider batches through the real ``anthropic`` and ``openai`` SDKs against the loopback fakes:
what is sent (custom ids, dedup, chunks), what comes back (order, cost, errors), and resume."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scriptorium import Engine, Overrides, RunRequest
from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium._testing.http import ScriptedHTTPServer
from scriptorium._testing.openai_server import FakeOpenAIServer
from scriptorium.batch import BatchLimits
from scriptorium.batch.job import custom_id_of
from scriptorium.errors import InvalidRequestError, LLMGenerateError, ScriptoriumError
from scriptorium.llm.anthropic.client import AnthropicClient
from scriptorium.llm.openai.client import OpenAIClient
from scriptorium.llm.pricing import cost_micro, price_for
from scriptorium.llm.retry import RetryHooks
from scriptorium.usecase.model import RunResult
from tests.batch_project import KEY, KEY_ENV, MODELS, flagged, label_text, make_project

PROVIDERS = ["anthropic", "openai"]
MESSAGE_PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions"}


@pytest.fixture(scope="session")
def servers() -> Iterator[dict[str, ScriptedHTTPServer]]:
    with FakeAnthropicServer() as anthropic_server, FakeOpenAIServer() as openai_server:
        yield {"anthropic": anthropic_server, "openai": openai_server}


class Setup:
    def __init__(self, provider: str, server: Any, root: Path) -> None:
        self.provider = provider
        self.server = server
        self.root = root
        self.sleeps: list[float] = []
        self.stop = False
        self.engine = self.make_engine()

    def make_engine(self) -> Engine:
        hooks = RetryHooks(sleep=self.sleeps.append, stop_requested=lambda: self.stop)
        return Engine(self.root, env={KEY_ENV: KEY}, retry_hooks=hooks)

    @property
    def batches(self) -> Any:
        return self.server.batches

    def requests(self, *texts: str) -> list[RunRequest]:
        return [RunRequest(prompt_id="label", inputs={"text": t}) for t in texts]

    def custom_id(self, request: RunRequest) -> str:
        return custom_id_of(self.engine.prepare(request).request_hash)


@pytest.fixture(params=PROVIDERS)
def setup(
    request: pytest.FixtureRequest, servers: dict[str, Any], tmp_path: Path
) -> Iterator[Setup]:
    provider: str = request.param
    server = servers[provider]
    server.clear()
    server.batches.text = label_text
    yield Setup(provider, server, make_project(tmp_path / "project", provider, server.url))
    server.clear()


def _results(results: list[RunResult | ScriptoriumError]) -> list[RunResult]:
    assert all(isinstance(r, RunResult) for r in results), results
    return [r for r in results if isinstance(r, RunResult)]


def test_each_distinct_request_is_sent_once_under_its_hash_hex(setup: Setup) -> None:
    requests = setup.requests("a", "b", "a", "c", "b")
    job = setup.engine.submit_batch(requests)
    results = _results(job.wait(0.01).results())
    expected = [setup.custom_id(r) for r in requests]
    assert sorted(setup.batches.submitted_ids()) == sorted(set(expected))
    assert all(len(c) == 64 and int(c, 16) >= 0 for c in setup.batches.submitted_ids())
    assert [custom_id_of(r.prepared.request_hash) for r in results] == expected
    # Duplicates fan out: one result per input row, each its own run.
    assert len({r.run_id for r in results}) == len(requests)


def test_the_server_records_the_batch_calls_the_sdk_made(setup: Setup) -> None:
    setup.engine.submit_batch(setup.requests("a", "b", "a")).wait(0.01).results()
    calls = [(r.method, r.path.split("?")[0]) for r in setup.server.requests]
    if setup.provider == "anthropic":
        (create,) = [r for r in setup.server.requests if r.method == "POST"]
        assert create.path == "/v1/messages/batches"
        assert len(create.body["requests"]) == 2
        assert ("GET", f"/v1/messages/batches/{setup.batches.created[0].id}/results") in calls
    else:
        assert [p for m, p in calls if m == "POST"] == ["/v1/files", "/v1/batches"]
        (upload,) = [r for r in setup.server.requests if r.path == "/v1/files"]
        assert upload.raw.count(b'"custom_id"') == 2


def test_status_reads_in_progress_until_every_chunk_has_ended(setup: Setup) -> None:
    setup.batches.polls_before_end = 3
    job = setup.engine.submit_batch(setup.requests("a", "b"))
    status = job.status()
    assert status == "in_progress"
    assert (status.rows, status.requests, status.chunks, status.chunks_ended) == (2, 2, 1, 0)
    job.wait(0.01)
    assert job.status() == "ended"
    assert str(job.status()) == "ended"


def test_rows_are_chunked_at_the_request_limit(setup: Setup) -> None:
    requests = setup.requests(*"abcde")
    job = setup.engine.submit_batch(requests, limits=BatchLimits(2, 10**9))
    _results(job.wait(0.01).results())
    assert [len(b.rows) for b in setup.batches.created] == [2, 2, 1]
    assert job.status().chunks == 3


def test_rows_are_chunked_at_the_byte_limit(setup: Setup) -> None:
    requests = setup.requests(*"abcd")
    # Each row is a few hundred bytes: a 700-byte limit holds at most two of them.
    job = setup.engine.submit_batch(requests, limits=BatchLimits(1000, 700))
    _results(job.wait(0.01).results())
    sizes = [len(b.rows) for b in setup.batches.created]
    assert sum(sizes) == 4
    assert max(sizes) <= 2
    assert len(sizes) >= 2


@contextlib.contextmanager
def _adapter(provider: str) -> Iterator[AnthropicClient | OpenAIClient]:
    """A run's own client, closed after the test (the engine's router keeps its clients open)."""
    client = AnthropicClient() if provider == "anthropic" else OpenAIClient()
    try:
        yield client
    finally:
        client.close()


def test_a_batch_row_is_exactly_the_body_a_run_sends(setup: Setup) -> None:
    (request,) = setup.requests("same body")
    with _adapter(setup.provider) as client:
        Engine(setup.root, env={KEY_ENV: KEY}, client=client).run(request)
    sent = [r for r in setup.server.requests if r.path.startswith(MESSAGE_PATHS[setup.provider])]
    setup.engine.submit_batch([request]).wait(0.01)
    (batch,) = setup.batches.created
    assert batch.rows[0][1] == sent[-1].body


def test_results_come_back_in_input_order_whatever_order_the_provider_lists(
    setup: Setup,
) -> None:
    setup.batches.order = "shuffled"
    setup.batches.seed = 7
    requests = setup.requests(*(f"text {n}" for n in range(12)))
    results = _results(setup.engine.submit_batch(requests).wait(0.01).results())
    for request, result in zip(requests, results, strict=True):
        assert result.validation.valid
        assert result.validation.value == {"label": f"label-{setup.custom_id(request)[:8]}"}


def test_every_row_is_priced_at_half_the_standard_rate(setup: Setup) -> None:
    results = _results(setup.engine.submit_batch(setup.requests("a", "b")).wait(0.01).results())
    usage = results[0].usage
    price = price_for(MODELS[setup.provider])
    assert price is not None
    assert usage.input_tokens > 0
    # micro-USD per million tokens, halved, rounded half up once.
    total = usage.input_tokens * price.input + usage.output_tokens * price.output
    assert usage.cost_micro == (total + 1_000_000) // 2_000_000
    standard, _ = cost_micro(MODELS[setup.provider], usage)
    assert usage.cost_micro < standard
    assert all(r.metadata["service_tier"] == "batch" for r in results)


def test_the_batch_response_says_service_tier_batch(setup: Setup) -> None:
    from scriptorium.batch.job import batch_apis

    (request,) = setup.requests("tier")
    _, llm_request = setup.engine.runner.request_for(request)
    provider = batch_apis(setup.engine.providers)(llm_request, None, RetryHooks())
    job = setup.engine.submit_batch([request]).wait(0.01)
    batch_id = job.state["chunks"][0]["batch_id"]
    (row,) = provider.results(batch_id)
    response = provider.response(llm_request, row)
    assert response.metadata["service_tier"] == "batch"
    assert response.usage.llm_calls == 1


def test_errored_rows_are_per_row_errors_with_the_runs_reasons(setup: Setup) -> None:
    error_type = "rate_limit_error" if setup.provider == "anthropic" else "requests"
    body = (
        {"type": "error", "error": {"type": error_type, "message": "slow down"}}
        if setup.provider == "anthropic"
        else {"error": {"message": "slow down", "type": error_type, "code": None}}
    )
    setup.batches.error_rows(flagged("LIMITED"), status=429, body=body)
    setup.batches.error_rows(flagged("BROKEN"))
    results = (
        setup.engine.submit_batch(setup.requests("ok", "LIMITED", "BROKEN")).wait(0.01).results()
    )
    assert isinstance(results[0], RunResult)
    limited, broken = results[1], results[2]
    assert isinstance(limited, LLMGenerateError)
    assert limited.reason == "rate_limited"
    assert limited.http_status == 429
    assert isinstance(broken, LLMGenerateError)
    assert broken.reason == "invalid_request"
    assert broken.provider == setup.provider


def test_without_a_text_rule_rows_take_the_servers_scripted_answers_in_row_order(
    setup: Setup,
) -> None:
    setup.batches.text = None
    setup.server.reply(json.dumps({"label": "scripted"}))
    setup.server.fail(529 if setup.provider == "anthropic" else 503)
    results = setup.engine.submit_batch(setup.requests("first", "second", "third")).wait(0.01)
    first, second, third = results.results()
    assert isinstance(first, RunResult)
    assert first.validation.value == {"label": "scripted"}
    assert isinstance(second, LLMGenerateError)
    assert second.reason == ("overloaded" if setup.provider == "anthropic" else "server_error")
    assert isinstance(third, RunResult)
    assert third.output.text == "ok"  # the default answer once the script is used up


def test_invalid_output_is_a_result_with_its_issues_as_in_a_run(setup: Setup) -> None:
    (result,) = setup.engine.submit_batch(setup.requests("INVALID")).wait(0.01).results()
    assert isinstance(result, RunResult)
    assert not result.validation.valid
    assert result.validation.issues


def test_a_repair_after_a_batch_row_is_an_ordinary_request_at_the_standard_price(
    setup: Setup,
) -> None:
    setup.server.reply(json.dumps({"label": "fixed"}))  # answers the repair request
    request = RunRequest(
        prompt_id="label", inputs={"text": "INVALID"}, overrides=Overrides(repair_attempts=1)
    )
    with _adapter(setup.provider) as client:
        engine = Engine(setup.root, env={KEY_ENV: KEY}, repair=True, client=client)
        (result,) = _results(engine.submit_batch([request]).wait(0.01).results())
    assert result.validation.valid
    assert result.validation.repaired
    assert [a.kind for a in result.attempts] == ["initial", "repair"]
    initial, repair = result.attempts
    assert initial.usage.cost_micro < repair.usage.cost_micro
    assert result.usage.cost_micro == initial.usage.cost_micro + repair.usage.cost_micro


def test_expired_rows_are_errors_until_the_job_is_resumed(setup: Setup, tmp_path: Path) -> None:
    setup.batches.expire_rows(flagged("LATE"))
    state = tmp_path / "job.state.json"
    requests = setup.requests("early", "LATE")
    results = setup.engine.submit_batch(requests, state=state).wait(0.01).results()
    assert isinstance(results[0], RunResult)
    late = results[1]
    assert isinstance(late, LLMGenerateError)
    assert late.reason == "timeout"
    assert late.retryable
    resumed = setup.engine.resume_batch(state).wait(0.01).results()
    _results(resumed)
    late_id = setup.custom_id(requests[1])
    assert setup.batches.submitted_ids().count(late_id) == 2
    assert setup.batches.submitted_ids().count(setup.custom_id(requests[0])) == 1


def test_a_canceled_job_is_sent_again_on_resume(setup: Setup, tmp_path: Path) -> None:
    setup.batches.polls_before_end = 1000
    state = tmp_path / "job.state.json"
    job = setup.engine.submit_batch(setup.requests("x", "y"), state=state)
    job.cancel()
    results = job.wait(0.01).results()
    assert all(isinstance(r, LLMGenerateError) and r.reason == "cancelled" for r in results)
    setup.batches.polls_before_end = 0
    _results(setup.engine.resume_batch(state).wait(0.01).results())
    assert len(setup.batches.created) == 2


def test_an_in_doubt_chunk_that_reached_the_provider_is_adopted(
    setup: Setup, tmp_path: Path
) -> None:
    state = tmp_path / "job.state.json"
    setup.engine.submit_batch(setup.requests("p", "q"), state=state)
    saved = json.loads(state.read_text("utf-8"))
    # As if killed between the create call and the state write.
    saved["chunks"][0].update(phase="submitting", batch_id=None)
    results = setup.engine.resume_batch(saved).wait(0.01).results()
    _results(results)
    assert len(setup.batches.created) == 1


def test_an_untagged_in_doubt_chunk_is_told_apart_from_a_stranger_by_its_custom_ids(
    setup: Setup, tmp_path: Path
) -> None:
    if setup.provider != "anthropic":
        pytest.skip("OpenAI batches carry our tag: no stranger can be mistaken for ours")
    state = tmp_path / "job.state.json"
    setup.engine.submit_batch(setup.requests("p", "q"), state=state)
    # Another client's batch of the same size, created in the same minute.
    stranger = [("a" * 64, {"model": "m"}), ("b" * 64, {"model": "m"})]
    setup.batches.create(stranger)
    saved = json.loads(state.read_text("utf-8"))
    saved["chunks"][0].update(phase="submitting", batch_id=None)
    ours = setup.batches.created[0].id
    job = setup.engine.resume_batch(saved)
    assert job.state["chunks"][0]["batch_id"] == ours
    _results(job.wait(0.01).results())
    assert len(setup.batches.created) == 2


def test_an_in_doubt_chunk_that_never_arrived_is_sent(setup: Setup, tmp_path: Path) -> None:
    state = tmp_path / "job.state.json"
    setup.engine.submit_batch(setup.requests("p", "q"), state=state)
    saved = json.loads(state.read_text("utf-8"))
    saved["chunks"][0].update(phase="submitting", batch_id=None)
    setup.server.clear()  # the provider never saw it
    setup.batches.text = label_text
    _results(setup.engine.resume_batch(saved).wait(0.01).results())
    assert len(setup.batches.created) == 1


def test_polling_backs_off_from_poll_s_to_sixty_seconds(setup: Setup) -> None:
    setup.batches.polls_before_end = 5
    job = setup.engine.submit_batch(setup.requests("slow"))
    setup.sleeps.clear()
    job.wait(20.0)
    # Submission polled once; four more polls follow sleeps of 20, 30, 45, 60 (capped).
    assert sum(setup.sleeps) == pytest.approx(20 + 30 + 45 + 60)
    assert max(setup.sleeps) <= 0.5


def test_stop_requested_ends_the_wait_and_the_job_can_be_resumed(
    setup: Setup, tmp_path: Path
) -> None:
    setup.batches.polls_before_end = 3
    state = tmp_path / "job.state.json"
    job = setup.engine.submit_batch(setup.requests("a"), state=state)
    setup.stop = True
    with pytest.raises(LLMGenerateError) as caught:
        job.wait(1.0)
    assert caught.value.reason == "cancelled"
    setup.stop = False
    _results(setup.engine.resume_batch(state).wait(0.01).results())
    assert len(setup.batches.created) == 1


def test_the_key_is_never_saved_in_the_state(setup: Setup, tmp_path: Path) -> None:
    state = tmp_path / "job.state.json"
    request = RunRequest(prompt_id="label", inputs={"text": "k"}, api_key=KEY)
    job = setup.engine.submit_batch([request], state=state)
    assert KEY not in state.read_text("utf-8")
    assert KEY not in json.dumps(job.state)


def test_rows_that_cannot_be_prepared_are_errors_in_their_slot(setup: Setup) -> None:
    requests = [*setup.requests("fine"), RunRequest(prompt_id="label", inputs={})]
    results = setup.engine.submit_batch(requests).wait(0.01).results()
    assert isinstance(results[0], RunResult)
    assert isinstance(results[1], InvalidRequestError)


def test_a_provider_without_a_batch_api_is_refused(tmp_path: Path) -> None:
    root = make_project(tmp_path, "anthropic", "http://127.0.0.1:9")
    (root / "profiles" / "p.yaml").write_text("provider: fake\nmodel: fake-1\n", "utf-8")
    engine = Engine(root)
    with pytest.raises(InvalidRequestError):
        engine.submit_batch([RunRequest(prompt_id="label", inputs={"text": "x"})])


def test_batch_rows_are_traced_like_runs_with_their_generation_marked_batch(
    setup: Setup,
) -> None:
    """With an observer, each row read back from a provider batch is a traced run: its ``run``
    span, and a ``chat`` span of kind ``batch`` (INTERNAL: nothing is called now) carrying the
    tokens and cost; a repair after it is an ordinary CLIENT call."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    from scriptorium.observe import OTelObserver

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    observer = OTelObserver(
        tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader])
    )
    setup.server.reply(json.dumps({"label": "fixed"}))  # answers the repair request
    requests = [
        RunRequest(prompt_id="label", inputs={"text": "a"}),
        RunRequest(
            prompt_id="label", inputs={"text": "INVALID"}, overrides=Overrides(repair_attempts=1)
        ),
    ]
    with _adapter(setup.provider) as client:
        engine = Engine(
            setup.root,
            env={KEY_ENV: KEY},
            repair=True,
            client=client,
            observer=observer,
        )
        results = _results(engine.submit_batch(requests).wait(0.01).results())

    spans = exporter.get_finished_spans()
    runs = [s for s in spans if s.name == "run label"]
    assert len(runs) == 2
    chats = [s for s in spans if s.name.startswith("chat ")]
    kinds = sorted(
        (str(s.attributes["scriptorium.generation.kind"]), s.kind)
        for s in chats
        if s.attributes is not None
    )
    assert kinds == [
        ("batch", SpanKind.INTERNAL),
        ("batch", SpanKind.INTERNAL),
        ("repair", SpanKind.CLIENT),
    ]
    for chat in chats:
        assert chat.parent is not None
        assert chat.parent.span_id in {r.context.span_id for r in runs}
    batch_costs = sorted(
        int(s.attributes["scriptorium.cost_micro"])  # type: ignore[arg-type]
        for s in chats
        if s.attributes is not None and s.attributes["scriptorium.generation.kind"] == "batch"
    )
    assert batch_costs == sorted(r.attempts[0].usage.cost_micro for r in results)
    # The duration histogram times client calls only: the repair's, not the batch answers.
    data = reader.get_metrics_data()
    assert data is not None
    durations = [
        point.count
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "gen_ai.client.operation.duration"
        for point in metric.data.data_points
        if isinstance(point, HistogramDataPoint)
    ]
    assert sum(durations) == 1
    assert KEY not in "".join(s.to_json() for s in spans)


def test_result_lines_holding_line_separators_are_read_whole(setup: Setup) -> None:
    """The results file is UTF-8 JSON lines with U+2028 and U+0085 raw inside strings: each
    line is one row (split at ``\\n`` only), its value as the model wrote it."""
    label = "one\u2028two\u0085three"
    setup.batches.text = lambda _custom_id, _body: json.dumps({"label": label}, ensure_ascii=False)
    results = _results(setup.engine.submit_batch(setup.requests("a", "b")).wait(0.01).results())
    assert [r.validation.value for r in results] == [{"label": label}] * 2


REASONING_MODELS = {"anthropic": "claude-opus-4-7", "openai": "gpt-5"}
REASONING_SENT = {
    "anthropic": {"thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}},
    "openai": {"reasoning_effort": "medium"},
}


def test_the_reasoning_setting_goes_into_each_row_body(setup: Setup) -> None:
    overrides = Overrides(model=REASONING_MODELS[setup.provider], reasoning="medium")
    requests = [
        RunRequest(prompt_id="label", inputs={"text": t}, overrides=overrides) for t in "ab"
    ]
    prepared = setup.engine.prepare(requests[0])
    assert prepared.reasoning is not None
    results = _results(setup.engine.submit_batch(requests).wait(0.01).results())
    assert all(r.prepared.settings.reasoning == "medium" for r in results)
    (batch,) = setup.batches.created
    for _custom_id, body in batch.rows:
        sent = {k: body[k] for k in ("thinking", "output_config", "reasoning_effort") if k in body}
        if "output_config" in sent:  # the structured output's format travels there as well
            sent["output_config"] = {"effort": sent["output_config"]["effort"]}
        assert sent == REASONING_SENT[setup.provider] == prepared.reasoning.sent
