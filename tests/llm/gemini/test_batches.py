"""Gemini Batch Mode through the real ``google-genai`` SDK against FakeGeminiServer: rows sent
inline and, above the inline limit, as an uploaded JSONL file; results read back inline and from
a results file; half price with the long-context tier; row errors; expiry, cancel and the
in-doubt chunk on resume, with the same state file as every provider's batches."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scriptorium import Engine, RunRequest
from scriptorium.batch import BatchLimits
from scriptorium.batch.job import custom_id_of
from scriptorium.errors import LLMGenerateError, ScriptoriumError
from scriptorium.llm.gemini.api import place_of
from scriptorium.llm.gemini.batches import GeminiBatches
from scriptorium.llm.retry import RetryHooks
from scriptorium.testing import FakeGeminiServer
from scriptorium.usecase.model import RunResult
from tests.batch_project import PROMPT, flagged, label_text

KEY_ENV = "GEMINI_BATCH_KEY"
KEY = "AIza-batch-test-0123456789abcdef"
MODEL = "gemini-2.5-flash"


@pytest.fixture(scope="module")
def shared() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer() as fake:
        yield fake


@pytest.fixture
def server(shared: FakeGeminiServer) -> Iterator[FakeGeminiServer]:
    shared.clear()
    shared.batches.text = label_text
    yield shared
    shared.clear()


def project(root: Path, server: FakeGeminiServer, extra: str = "", *, keyed: bool = True) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "label.prompt.md").write_text(PROMPT.format(profile="p"), "utf-8")
    key = f"api_key_env: {KEY_ENV}\n" if keyed else ""
    (root / "profiles" / "p.yaml").write_text(
        f"provider: gemini\nmodel: {MODEL}\nendpoint: {server.url}\n"
        f"{key}settings: {{max_tokens: 64}}\n{extra}",
        "utf-8",
    )
    return root


@pytest.fixture
def engine(tmp_path: Path, server: FakeGeminiServer) -> Engine:
    hooks = RetryHooks(sleep=lambda s: None)
    return Engine(project(tmp_path / "p", server), env={KEY_ENV: KEY}, retry_hooks=hooks)


def rows(*texts: str) -> list[RunRequest]:
    return [RunRequest(prompt_id="label", inputs={"text": t}) for t in texts]


def results_of(found: list[RunResult | ScriptoriumError]) -> list[RunResult]:
    assert all(isinstance(r, RunResult) for r in found), found
    return [r for r in found if isinstance(r, RunResult)]


def test_rows_go_inline_once_each_under_their_hash_and_come_back_in_order(
    engine: Engine, server: FakeGeminiServer
) -> None:
    server.batches.order = "shuffled"
    requests = rows("a", "b", "a", "c")
    results = results_of(engine.submit_batch(requests).wait(0.01).results())
    (create,) = [r for r in server.requests if r.path.endswith(":batchGenerateContent")]
    assert create.path == f"/v1beta/models/{MODEL}:batchGenerateContent"
    inline = create.body["batch"]["inputConfig"]["requests"]["requests"]
    keys = [r["metadata"]["key"] for r in inline]
    assert len(keys) == 3
    assert all(len(k) == 64 for k in keys)
    assert create.body["batch"]["displayName"]  # the chunk tag
    expected = [custom_id_of(engine.prepare(r).request_hash) for r in requests]
    assert [custom_id_of(r.prepared.request_hash) for r in results] == expected
    for request, result in zip(requests, results, strict=True):
        cid = custom_id_of(engine.prepare(request).request_hash)
        assert result.validation.value == {"label": f"label-{cid[:8]}"}


def test_a_row_is_exactly_the_body_a_run_sends(engine: Engine, server: FakeGeminiServer) -> None:
    (request,) = rows("same body")
    server.reply(json.dumps({"label": "run"}))
    engine.run(request)
    sent = server.requests[-1].body
    engine.submit_batch([request]).wait(0.01)
    (batch,) = server.batches.created
    assert batch.rows[0][1] == sent


def test_rows_above_the_inline_limit_go_as_an_uploaded_file_and_come_back_from_one(
    engine: Engine, server: FakeGeminiServer
) -> None:
    """Above the inline limit the rows are uploaded through the SDK's Files API as JSONL, the
    batch names the file, and the results are downloaded from the results file."""
    requests = rows("x", "y")
    (_, first), (_, second) = (engine.runner.request_for(r) for r in requests)
    provider = GeminiBatches(key=KEY, place=place_of(server.url, {}), inline_bytes=10)
    entries = [provider.entry(f"{n:064x}", req) for n, req in enumerate((first, second))]
    remote = provider.create(entries, "tag-1")
    uploads = [r for r in server.requests if r.path.startswith("/upload/")]
    assert len(uploads) == 2  # start, then upload and finalize
    assert uploads[-1].raw.count(b'"key"') == 2
    create = next(r for r in server.requests if r.path.endswith(":batchGenerateContent"))
    assert create.body["batch"]["inputConfig"]["fileName"].startswith("files/")
    while not provider.retrieve(remote.id).ended:
        pass
    listed = provider.results(remote.id)
    assert sorted(r.custom_id for r in listed) == sorted(e.custom_id for e in entries)
    assert all(r.kind == "succeeded" for r in listed)
    assert any(":download" in r.path for r in server.requests)
    response = provider.response(
        first, next(r for r in listed if r.custom_id == entries[0].custom_id)
    )
    assert response.metadata["service_tier"] == "batch"
    provider.close()


def test_rows_are_priced_at_half_the_standard_rate(engine: Engine) -> None:
    (result, _) = results_of(engine.submit_batch(rows("a", "b")).wait(0.01).results())
    usage = result.usage
    # gemini-2.5-flash: 10 input at 0.30 and 5 output at 2.50 micro-USD per token, halved.
    assert usage.cost_micro == (10 * 300_000 + 5 * 2_500_000 + 1_000_000) // 2_000_000
    assert result.metadata["service_tier"] == "batch"


def test_errored_rows_are_per_row_errors_with_the_runs_reasons(
    engine: Engine, server: FakeGeminiServer
) -> None:
    limited = {"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}
    server.batches.error_rows(flagged("LIMITED"), status=429, body=limited)
    server.batches.error_rows(flagged("BROKEN"))
    found = engine.submit_batch(rows("ok", "LIMITED", "BROKEN")).wait(0.01).results()
    assert isinstance(found[0], RunResult)
    assert isinstance(found[1], LLMGenerateError)
    assert (found[1].reason, found[1].http_status) == ("rate_limited", 429)
    assert isinstance(found[2], LLMGenerateError)
    assert (found[2].reason, found[2].provider) == ("invalid_request", "gemini")


def test_expired_rows_are_sent_again_on_resume(
    engine: Engine, server: FakeGeminiServer, tmp_path: Path
) -> None:
    server.batches.expire_rows(flagged("LATE"))
    state = tmp_path / "job.state.json"
    requests = rows("early", "LATE")
    found = engine.submit_batch(requests, state=state).wait(0.01).results()
    assert isinstance(found[0], RunResult)
    assert isinstance(found[1], LLMGenerateError)
    assert found[1].reason == "timeout"
    results_of(engine.resume_batch(state).wait(0.01).results())
    late = custom_id_of(engine.prepare(requests[1]).request_hash)
    assert server.batches.submitted_ids().count(late) == 2


def test_a_canceled_job_is_sent_again_on_resume(
    engine: Engine, server: FakeGeminiServer, tmp_path: Path
) -> None:
    server.batches.polls_before_end = 1000
    state = tmp_path / "job.state.json"
    job = engine.submit_batch(rows("x", "y"), state=state)
    job.cancel()
    found = job.wait(0.01).results()
    assert all(isinstance(r, LLMGenerateError) and r.reason == "cancelled" for r in found)
    server.batches.polls_before_end = 0
    results_of(engine.resume_batch(state).wait(0.01).results())
    assert len(server.batches.created) == 2


def test_an_in_doubt_chunk_that_reached_the_provider_is_adopted_by_its_tag(
    engine: Engine, server: FakeGeminiServer, tmp_path: Path
) -> None:
    state = tmp_path / "job.state.json"
    engine.submit_batch(rows("p", "q"), state=state)
    saved: dict[str, Any] = json.loads(state.read_text("utf-8"))
    saved["chunks"][0].update(phase="submitting", batch_id=None)  # killed before the write
    results_of(engine.resume_batch(saved).wait(0.01).results())
    assert len(server.batches.created) == 1


def test_rows_are_chunked_at_the_request_limit(engine: Engine, server: FakeGeminiServer) -> None:
    job = engine.submit_batch(rows(*"abcde"), limits=BatchLimits(2, 10**9))
    results_of(job.wait(0.01).results())
    assert [len(b.rows) for b in server.batches.created] == [2, 2, 1]


def test_a_vertex_ai_profile_has_no_batch_mode(tmp_path: Path, server: FakeGeminiServer) -> None:
    root = project(
        tmp_path / "v",
        server,
        "options: {vertexai: true, project: p1, location: us-central1, access_token_env: TOK}\n",
        keyed=False,  # Vertex AI takes an access token, never an API key
    )
    engine = Engine(root, env={KEY_ENV: KEY, "TOK": "ya29.token"})
    with pytest.raises(LLMGenerateError) as caught:
        engine.submit_batch(rows("a")).wait(0.01)
    assert caught.value.reason == "config"
    assert "Vertex AI" in str(caught.value)
