"""The streaming side of the in-process clients: FakeClient, the fake and replay providers, the
router and the one-chunk fallback all give text chunks adding up to the response, then it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.fake import FakeProviderClient
from scriptorium.llm.model import LLMRequest, LLMResponse, Target
from scriptorium.llm.replay import ReplayClient
from scriptorium.llm.router import Router
from scriptorium.llm.streaming import StreamItem, astream_of, chunked, stream_of
from scriptorium.prompt.model import Message
from scriptorium.testing import FakeClient
from scriptorium.usecase import Done, RunRequest, TextDelta
from tests.comparable import comparable
from tests.conftest import RunnerFactory


def _request(provider: str = "fake", **options: object) -> LLMRequest:
    return LLMRequest(
        target=Target(provider=provider, model="m"),
        messages=(Message(role="user", content="Hi"),),
        options=dict(options),
    )


def _split(items: list[StreamItem]) -> tuple[list[str], LLMResponse]:
    *chunks, last = items
    assert all(isinstance(c, str) for c in chunks)
    assert isinstance(last, LLMResponse)
    return [c for c in chunks if isinstance(c, str)], last


async def _collect(client: object, request: LLMRequest) -> list[StreamItem]:
    return [item async for item in astream_of(client, request)]


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=200), st.integers(1, 12))
def test_chunked_cuts_text_into_ordered_non_empty_pieces(text: str, pieces: int) -> None:
    """chunked() never loses, reorders or adds a character, and gives at most ``pieces`` chunks."""
    chunks = chunked(text, pieces)
    assert "".join(chunks) == text
    assert all(chunks)
    assert len(chunks) <= pieces


def test_fake_client_streams_its_text_in_several_chunks() -> None:
    """testing.FakeClient: several chunks, then the scripted response; recorded like generate."""
    client = FakeClient(["Hello there, how are you today?"], chunks=3)
    chunks, response = _split(list(client.stream(_request())))
    assert len(chunks) == 3
    assert "".join(chunks) == response.text
    assert client.calls == 1
    async_chunks, async_response = _split(asyncio.run(_collect(client, _request())))
    assert async_chunks == chunks
    assert async_response == response


def test_fake_client_scripted_error_is_raised_before_any_chunk() -> None:
    """A scripted exception comes out of the stream before it yields anything."""
    client = FakeClient([LLMGenerateError("no", reason="overloaded")])
    with pytest.raises(LLMGenerateError):
        next(iter(client.stream(_request())))


def test_fake_provider_streams_its_canned_answer() -> None:
    """The profile-configured fake provider streams in chunks, through the router too."""
    answer = '{"label": "positive", "score": 0.9}'
    chunks, response = _split(list(FakeProviderClient(responses=[answer]).stream(_request())))
    assert len(chunks) > 1
    assert "".join(chunks) == response.text == answer
    routed, _ = _split(list(Router().stream(_request(responses=[answer]))))
    assert "".join(routed) == answer


def test_replay_streams_the_recorded_text(tmp_path: Path) -> None:
    """Record through a streaming client, then replay the cassette as a stream in chunks."""
    cassette = tmp_path / "tape.jsonl"
    request = _request("replay")
    inner = FakeClient(["The recorded answer, word by word."])
    recording = list(ReplayClient(cassette, mode="record", inner=inner).stream(request))
    recorded_chunks, recorded = _split(recording)
    assert "".join(recorded_chunks) == recorded.text
    chunks, replayed = _split(list(ReplayClient(cassette).stream(request)))
    assert len(chunks) > 1
    assert "".join(chunks) == replayed.text == recorded.text
    assert replayed.attempts == 0


def test_a_client_without_stream_is_one_chunk() -> None:
    """stream_of/astream_of over a generate-only client: the whole text, then the response."""

    class Plain:
        def generate(self, request: LLMRequest) -> LLMResponse:
            return LLMResponse(text="whole")

    assert list(stream_of(Plain(), _request())) == ["whole", LLMResponse(text="whole")]
    assert asyncio.run(_collect(Plain(), _request())) == ["whole", LLMResponse(text="whole")]


def test_an_object_that_cannot_generate_is_a_config_error() -> None:
    """Neither stream nor generate: reason config."""
    with pytest.raises(LLMGenerateError) as caught:
        stream_of(object(), _request())
    assert caught.value.reason == "config"


# make_runner is a factory: each example builds fresh runners from it.
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.one_of(
        st.text(max_size=80),
        st.fixed_dictionaries({"name": st.text(max_size=10), "email": st.text(max_size=10)}).map(
            json.dumps
        ),
    ),
    st.integers(1, 9),
)
def test_streamed_result_equals_run_result_for_any_text(
    make_runner: RunnerFactory, text: str, pieces: int
) -> None:
    """Whatever the answer and however it is cut, the deltas add up to it and the streamed
    result equals run()'s."""
    request = RunRequest(prompt_id="extract/contact", artifacts={"document": "doc.txt"})
    ran = make_runner(FakeClient([text])).run(request)
    events = list(make_runner(FakeClient([text], chunks=pieces)).stream(request))
    done = events[-1]
    assert isinstance(done, Done)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == text
    assert comparable(done.result) == comparable(ran)
