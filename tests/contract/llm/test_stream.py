"""The LLM client contract, part three: streams, over every adapter.

A stream yields the text in pieces and then the complete ``LLMResponse``; the pieces join to its
text. A stream that ends without its terminator (Anthropic ``message_stop``; OpenAI the finish
reason and ``[DONE]``) is a ``connection`` failure carrying the text so far, never a result; a
body that is not a stream is read as the complete answer when it is one, else refused as
``invalid_response``. Lone surrogates never reach a consumer, in deltas or in the result. Closing
a stream part way closes its connection.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.client import ReasoningChunk, StreamItem
from scriptorium.llm.model import LLMResponse
from scriptorium.usecase import Done, ReasoningDelta, TextDelta
from tests.conftest import RunnerFactory
from tests.contract.llm.harnesses import SAY, Harness, adapters, runner_over

TEXT = "The stream brings the answer in pieces, in order."


def split(items: list[StreamItem]) -> tuple[list[str], LLMResponse]:
    """The text pieces and the closing response of a complete stream."""
    *pieces, last = items
    assert isinstance(last, LLMResponse), f"a stream ends with its response, not {last!r}"
    texts = [p for p in pieces if isinstance(p, str)]
    assert len(texts) == len(pieces), "only text comes before the response"
    return texts, last


def read_until_failure(items: Iterator[StreamItem]) -> tuple[list[str], LLMGenerateError]:
    """The pieces a failing stream gave before it failed, and the failure."""
    pieces: list[str] = []
    try:
        for item in items:
            if not isinstance(item, str):
                pytest.fail(f"a failing stream must not end with a response: {item!r}")
            pieces.append(item)
    except LLMGenerateError as err:
        return pieces, err
    pytest.fail(f"the stream ended without failing, after {pieces!r}")


def test_a_stream_ends_cleanly_with_pieces_that_join_to_its_text(harness: Harness) -> None:
    """Several non-empty pieces, in order, then the response whose text they make up."""
    harness.answer(TEXT)
    pieces, response = split(harness.run(lambda c: list(c.stream(harness.request()))))
    assert len(pieces) > 1
    assert all(pieces)
    assert "".join(pieces) == response.text == TEXT
    assert response.finish_reason == "stop"
    assert response.attempts == harness.requests_per_answer


def test_an_async_stream_is_the_same_stream(harness: Harness) -> None:
    """``astream`` brings the same text and response as ``stream``."""
    harness.answer(TEXT)

    def collect(client: Any) -> list[StreamItem]:
        async def read() -> list[StreamItem]:
            return [item async for item in client.astream(harness.request())]

        return asyncio.run(read())

    pieces, response = split(harness.run(collect))
    assert "".join(pieces) == response.text == TEXT
    assert response.finish_reason == "stop"


def test_a_connection_reset_mid_stream_fails_with_the_text_so_far(harness: Harness) -> None:
    """A reset after some text: ``connection``, with the pieces already given as
    ``partial_text``, and no retry (the consumer has seen text)."""
    harness.cut_stream("Hello, wor", how="reset")
    pieces, err = read_until_failure(harness.client.stream(harness.request()))
    assert err.reason == "connection"
    assert err.partial_text == "".join(pieces) == "Hello, wor"
    assert harness.requests_made() == 1


@adapters()
def test_a_stream_ending_without_its_terminator_is_a_connection_failure(harness: Harness) -> None:
    """The body ends cleanly after some text but the stream never says it is complete: that is a
    broken stream, not an answer."""
    harness.cut_stream("Hello, wor", how="eof")
    pieces, err = read_until_failure(harness.client.stream(harness.request()))
    assert err.reason == "connection"
    assert err.partial_text == "".join(pieces) == "Hello, wor"


@adapters()
def test_a_complete_json_answer_to_a_stream_request_is_read_as_the_answer(
    harness: Harness,
) -> None:
    """A server that answers a stream request with the whole JSON answer has still answered."""
    harness.foreign_body_to_stream("answer", TEXT)
    pieces, response = split(list(harness.client.stream(harness.request())))
    assert "".join(pieces) == response.text == TEXT
    assert response.finish_reason == "stop"


@pytest.mark.parametrize("kind", ["json", "html"])
@adapters()
def test_a_body_that_is_no_answer_to_a_stream_request_is_invalid(
    harness: Harness, kind: str
) -> None:
    """JSON that is not an answer, or HTML, where a stream was asked: ``invalid_response``,
    never an empty result."""
    harness.foreign_body_to_stream(kind)
    with pytest.raises(LLMGenerateError) as caught:
        list(harness.client.stream(harness.request()))
    assert caught.value.reason == "invalid_response"


@adapters()
def test_an_empty_event_stream_is_a_connection_failure(harness: Harness) -> None:
    """An event stream that ends before its first event ended without its terminator too."""
    harness.foreign_body_to_stream("empty")
    pieces, err = read_until_failure(harness.client.stream(harness.request()))
    assert pieces == []
    assert err.reason == "connection"
    assert err.partial_text == ""


@adapters()
def test_lone_surrogates_in_stream_deltas_become_replacement_characters(
    harness: Harness, make_runner: RunnerFactory
) -> None:
    """A streamed run hands out no lone surrogate: each delta and the result hold U+FFFD, and
    the run has its ``encoding`` issue."""
    harness.answer("a\ud800b", chunks=1)

    def stream(client: Any) -> list[Any]:
        with runner_over(harness, client, make_runner).stream(SAY) as events:
            return list(events)

    events = harness.run(stream)
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(deltas) == "a\ufffdb"
    for delta in deltas:
        delta.encode("utf-8")
    done = events[-1]
    assert isinstance(done, Done)
    assert done.result.output.text == "a\ufffdb"
    assert [i.keyword for i in done.result.validation.issues] == ["encoding"]


def test_closing_a_stream_part_way_closes_its_connection(harness: Harness) -> None:
    """A consumer that stops reading closes the stream: nothing more comes, nothing is raised,
    and the connection it held is closed at once (not drained to the end)."""
    harness.answer("x" * 60, chunks=2, pace_s=0.1)  # about 3 s to send in full

    def cancel(client: Any) -> dict[str, Any]:
        before = harness.connections()
        # Closable, as every adapter's stream is: closing is how a consumer stops it.
        items: Generator[StreamItem, None, None] = client.stream(harness.request())
        first = next(items)
        during = harness.connections()
        started = time.perf_counter()
        items.close()
        closing_s = time.perf_counter() - started
        return {
            "first": first,
            "rest": list(items),
            "before": before,
            "during": during,
            "after": harness.connections(),
            "closing_s": closing_s,
        }

    seen = harness.run(cancel, record=lambda client: list(client.stream(harness.request())))
    assert isinstance(seen["first"], str)
    assert seen["first"]
    assert seen["rest"] == []
    assert seen["closing_s"] < 1.5  # at once, not after the rest of the stream
    if seen["during"] is None:
        return  # an in-process stream: closing it is all there is to cancel
    opened = seen["during"] - seen["before"]
    assert len(opened) == 1, "the stream holds one connection of its own"
    assert not opened & seen["after"], "the connection is still open after the stream closed"


def test_reasoning_streams_first_as_reasoning_chunks(harness: Harness) -> None:
    """Reasoning pieces (``ReasoningChunk``) come before the text pieces and join to the
    response's reasoning; the text pieces alone join to its text."""
    reasoning = "First I read the question, then I answer it."
    harness.answer_reasoning(TEXT, reasoning, output_tokens=40, reasoning_tokens=25, chunks=9)
    pieces, response = split(harness.run(lambda client: list(client.stream(harness.request()))))
    thoughts = [p for p in pieces if isinstance(p, ReasoningChunk)]
    assert thoughts
    assert pieces[: len(thoughts)] == thoughts
    assert "".join(thoughts) == response.reasoning == reasoning
    assert "".join(p for p in pieces if not isinstance(p, ReasoningChunk)) == response.text == TEXT
    assert response.usage.reasoning_tokens == 25


def test_a_run_streams_reasoning_deltas_before_its_text(
    harness: Harness, make_runner: RunnerFactory
) -> None:
    reasoning = "Say it plainly."
    harness.answer_reasoning(TEXT, reasoning, output_tokens=40, reasoning_tokens=5, chunks=9)

    def streamed(client: Any) -> list[Any]:
        return list(runner_over(harness, client, make_runner).stream(SAY))

    events = harness.run(streamed)
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("ReasoningDelta") < kinds.index("TextDelta")
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == reasoning
    done = events[-1]
    assert isinstance(done, Done)
    assert done.result.output.reasoning == reasoning
    assert done.result.output.text == TEXT
