"""The ``replay`` provider: a JSONL cassette keyed by ``request_hash``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from scriptorium import hashing
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.client import ReasoningChunk
from scriptorium.llm.model import LLMRequest, LLMResponse, Target, Usage
from scriptorium.llm.replay import ReplayClient, request_hash
from scriptorium.prompt.model import Message
from scriptorium.testing import FakeClient

CANARY = "sk-canary-replay-0123456789abcdef"


def make_request(text: str = "Summarize.") -> LLMRequest:
    return LLMRequest(
        target=Target(provider="replay", model="gpt-4o-mini"),
        api_key=CANARY,
        system="You summarize.",
        messages=(Message(role="user", content=text),),
    )


RECORDED = LLMResponse(
    text="A summary.",
    model="gpt-4o-mini",
    usage=Usage(input_tokens=12, output_tokens=4, cost_micro=5, llm_calls=2),
    attempts=2,
    latency_ms=321.0,
    metadata={"request_id": "req_1"},
)


def test_request_hash_is_the_runner_hash_and_ignores_the_key() -> None:
    """The cassette key is hash_json(hash_form()); a different key gives the same hash."""
    request = make_request()
    assert request_hash(request) == hashing.hash_json(request.hash_form())
    other_key = request.model_copy(update={"api_key": "another"})
    assert request_hash(other_key) == request_hash(request)


def test_record_then_replay_in_a_new_instance(tmp_path: Path) -> None:
    """Recorded responses are served back by a fresh client, with no request made now."""
    cassette = tmp_path / "cassettes" / "run.jsonl"
    inner = FakeClient([RECORDED])
    recorded = ReplayClient(cassette, mode="record", inner=inner).generate(make_request())
    assert recorded == RECORDED
    replayed = ReplayClient(cassette).generate(make_request())
    assert (replayed.text, replayed.model, replayed.finish_reason) == (
        "A summary.",
        "gpt-4o-mini",
        "stop",
    )
    assert (replayed.usage.input_tokens, replayed.usage.output_tokens) == (12, 4)
    assert (replayed.attempts, replayed.usage.llm_calls, replayed.usage.cost_micro) == (0, 0, 0)
    assert replayed.metadata["replay"]["recorded_attempts"] == 2
    assert replayed.metadata["replay"]["recorded_cost_micro"] == 5
    assert replayed.metadata["request_id"] == "req_1"


def test_a_miss_names_the_hash(tmp_path: Path) -> None:
    """An unrecorded request fails with reason replay_miss and its hash in the message."""
    cassette = tmp_path / "run.jsonl"
    ReplayClient(cassette, mode="record", inner=FakeClient(["x"])).generate(make_request("a"))
    missing = make_request("b")
    with pytest.raises(LLMGenerateError) as caught:
        ReplayClient(cassette).generate(missing)
    assert caught.value.reason == "replay_miss"
    assert request_hash(missing) in str(caught.value)


def test_a_missing_cassette_is_a_miss(tmp_path: Path) -> None:
    """Replaying from a file that does not exist misses every request."""
    with pytest.raises(LLMGenerateError) as caught:
        ReplayClient(tmp_path / "none.jsonl").generate(make_request())
    assert caught.value.reason == "replay_miss"


def test_the_key_is_never_written(tmp_path: Path) -> None:
    """The cassette holds the hash form of the request, never the key."""
    cassette = tmp_path / "run.jsonl"
    ReplayClient(cassette, mode="record", inner=FakeClient(["x"])).generate(make_request())
    text = cassette.read_text(encoding="utf-8")
    assert CANARY not in text
    (line,) = text.splitlines()
    entry = json.loads(line)
    assert set(entry) == {"hash_version", "request_hash", "request", "response"}
    assert entry["hash_version"] == 2
    assert entry["request"] == make_request().hash_form()


def test_recording_appends_and_the_last_line_wins(tmp_path: Path) -> None:
    """Re-recording a request appends a line; replay serves the newest."""
    cassette = tmp_path / "run.jsonl"
    ReplayClient(cassette, mode="record", inner=FakeClient(["old"])).generate(make_request())
    ReplayClient(cassette, mode="record", inner=FakeClient(["new"])).generate(make_request())
    assert len(cassette.read_text(encoding="utf-8").splitlines()) == 2
    assert ReplayClient(cassette).generate(make_request()).text == "new"


def test_the_cassette_is_reloaded_when_it_changes(tmp_path: Path) -> None:
    """A replaying client picks up lines another writer appended (cache keyed by mtime/size)."""
    cassette = tmp_path / "run.jsonl"
    replayer = ReplayClient(cassette)
    with pytest.raises(LLMGenerateError):
        replayer.generate(make_request())
    ReplayClient(cassette, mode="record", inner=FakeClient(["later"])).generate(make_request())
    assert replayer.generate(make_request()).text == "later"


def test_a_corrupt_line_is_a_config_error(tmp_path: Path) -> None:
    """A line that is not an entry fails with reason config, naming the line."""
    cassette = tmp_path / "run.jsonl"
    cassette.write_text('{"request_hash": "sha256:x"}\n', encoding="utf-8")
    with pytest.raises(LLMGenerateError) as caught:
        ReplayClient(cassette).generate(make_request())
    assert caught.value.reason == "config"
    assert "line 1" in str(caught.value)


def test_record_mode_needs_an_inner_client(tmp_path: Path) -> None:
    """Record mode without a client to record from is a configuration error."""
    with pytest.raises(LLMGenerateError) as caught:
        ReplayClient(tmp_path / "run.jsonl", mode="record")
    assert caught.value.reason == "config"


def test_async_record_and_replay(tmp_path: Path) -> None:
    """agenerate records through the inner client's async port and replays the same way."""
    cassette = tmp_path / "run.jsonl"
    recorder = ReplayClient(cassette, mode="record", inner=FakeClient(["async"]))
    assert asyncio.run(recorder.agenerate(make_request())).text == "async"
    assert asyncio.run(ReplayClient(cassette).agenerate(make_request())).text == "async"


def test_verify_reports_how_many_requests_the_cassette_answers(tmp_path: Path) -> None:
    """In replay mode verify proves the cassette is readable and counts its entries."""
    cassette = tmp_path / "run.jsonl"
    ReplayClient(cassette, mode="record", inner=FakeClient(["x"])).generate(make_request())
    response = ReplayClient(cassette).verify(Target(provider="replay", model="m"))
    assert response.metadata == {"verified": "cassette", "cassette": "run.jsonl", "entries": 1}


def test_replayed_responses_say_so(tmp_path: Path) -> None:
    """``metadata["replayed"]`` marks an answer that no provider gave now."""
    cassette = tmp_path / "run.jsonl"
    recorded = ReplayClient(cassette, mode="record", inner=FakeClient([RECORDED]))
    assert "replayed" not in recorded.generate(make_request()).metadata
    assert ReplayClient(cassette).generate(make_request()).metadata["replayed"] is True


def test_moving_the_endpoint_still_hits_the_cassette(tmp_path: Path) -> None:
    """Recorded through one endpoint, replayed through another: the same request, the same key."""
    cassette = tmp_path / "run.jsonl"
    here = make_request().model_copy(
        update={
            "target": Target(provider="replay", model="gpt-4o-mini", endpoint="http://127.0.0.1:1")
        }
    )
    there = here.model_copy(
        update={
            "target": Target(provider="replay", model="gpt-4o-mini", endpoint="https://p.example")
        }
    )
    ReplayClient(cassette, mode="record", inner=FakeClient([RECORDED])).generate(here)
    assert request_hash(here) == request_hash(there)
    assert ReplayClient(cassette).generate(there).text == "A summary."


def _form_1_line(request: LLMRequest, endpoint: str | None) -> str:
    """A cassette line as written when the hash still covered the endpoint."""
    form = request.hash_form()
    form["target"] = {**form["target"], "endpoint": endpoint}
    entry = {
        "request_hash": hashing.hash_json(form),
        "request": form,
        "response": RECORDED.model_dump(mode="json"),
    }
    return json.dumps(entry) + "\n"


def test_a_cassette_of_the_first_hash_form_is_read_not_missed(tmp_path: Path) -> None:
    """A line without ``hash_version`` gets its key recomputed from the request it stores."""
    cassette = tmp_path / "old.jsonl"
    cassette.write_text(_form_1_line(make_request(), "http://127.0.0.1:9"), encoding="utf-8")
    assert ReplayClient(cassette).generate(make_request()).text == "A summary."


def test_a_first_form_line_without_its_request_and_an_unknown_form_are_refused(
    tmp_path: Path,
) -> None:
    """What cannot be read is refused by line number, never silently missed."""
    cassette = tmp_path / "bad.jsonl"
    cassette.write_text(
        json.dumps({"request_hash": "sha256:00", "response": {}}) + "\n", encoding="utf-8"
    )
    with pytest.raises(LLMGenerateError, match=r"line 1 .*form 1") as old:
        ReplayClient(cassette).generate(make_request())
    assert old.value.reason == "config"
    cassette.write_text(
        json.dumps({"hash_version": 99, "request_hash": "sha256:00", "response": {}}) + "\n",
        encoding="utf-8",
    )
    with pytest.raises(LLMGenerateError, match="form 99") as new:
        ReplayClient(cassette).generate(make_request())
    assert new.value.reason == "config"


def test_answers_holding_line_separators_replay_whole(tmp_path: Path) -> None:
    """U+2028, U+2029 and U+0085 are written raw in a cassette line; the line is still one entry
    (lines are split at ``\\n`` only) and the text comes back as recorded."""
    text = "one\u2028two\u2029three\u0085four"
    cassette = tmp_path / "run.jsonl"
    inner = FakeClient([RECORDED.model_copy(update={"text": text})])
    ReplayClient(cassette, mode="record", inner=inner).generate(make_request())
    assert "\u2028" in cassette.read_text(encoding="utf-8")
    assert ReplayClient(cassette).generate(make_request()).text == text


def test_a_cassette_line_nested_too_deeply_is_a_config_error(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    cassette.write_text("[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    with pytest.raises(LLMGenerateError) as caught:
        ReplayClient(cassette).generate(make_request())
    assert caught.value.reason == "config"


def test_recorded_reasoning_is_replayed_and_streamed_first(tmp_path: Path) -> None:
    """A recorded answer's reasoning and reasoning tokens come back; a replayed stream hands the
    reasoning out (as ReasoningChunk items) before the text. An answer without reasoning is
    recorded as before: no reasoning members in the line."""
    cassette = tmp_path / "run.jsonl"
    thought = RECORDED.model_copy(
        update={
            "reasoning": "Keep it short.",
            "usage": Usage(input_tokens=12, output_tokens=9, reasoning_tokens=5),
        }
    )
    recorder = ReplayClient(cassette, mode="record", inner=FakeClient([thought, RECORDED]))
    recorder.generate(make_request("a"))
    recorder.generate(make_request("b"))
    first, second = cassette.read_text(encoding="utf-8").splitlines()
    assert "reasoning" in first
    assert "reasoning" not in second
    replayed = ReplayClient(cassette).generate(make_request("a"))
    assert (replayed.reasoning, replayed.usage.reasoning_tokens) == ("Keep it short.", 5)
    items = list(ReplayClient(cassette).stream(make_request("a")))
    pieces = [i for i in items if isinstance(i, str)]
    thoughts = [p for p in pieces if isinstance(p, ReasoningChunk)]
    assert "".join(thoughts) == "Keep it short."
    assert pieces[: len(thoughts)] == thoughts
    assert "".join(p for p in pieces if not isinstance(p, ReasoningChunk)) == "A summary."
