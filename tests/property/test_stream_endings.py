"""Hypothesis over stream bodies and how they end, for both providers' folds through the shared
reading loop (``llm.streaming.drive`` / ``adrive``): take a complete, valid event stream writing
some text, cut it at any byte, deliver it in any chunks. Either the cut kept the terminator, and
the stream is the complete answer, or it did not, and the stream fails as a ``connection`` with the
text handed out so far as ``partial_text`` (a prefix of the answer). Never a valid shorter answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scriptorium.llm.anthropic.stream as anthropic_stream
import scriptorium.llm.openai.stream as openai_stream
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.anthropic.call import Call as AnthropicCall
from scriptorium.llm.anthropic.sdk import classify as anthropic_classify
from scriptorium.llm.model import LLMRequest, LLMResponse, Target
from scriptorium.llm.openai.call import Call as OpenAICall
from scriptorium.llm.openai.sdk import classify as openai_classify
from scriptorium.llm.retry import RetryHooks
from scriptorium.llm.streaming import adrive, drive
from scriptorium.prompt.model import Message
from tests.llm.test_stream_endings import anthropic_events, openai_events

KEY = "sk-stream-property-canary-6a1f"


class Body:
    """An HTTP response whose body is ``chunks`` (what a provider's ``open`` hands the loop)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.headers = {"content-type": "text/event-stream"}
        self.closed = False

    def iter_bytes(self) -> Iterator[bytes]:
        yield from self.chunks

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk

    def read(self) -> bytes:
        return b"".join(self.chunks)

    async def aread(self) -> bytes:
        return self.read()

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


def _request(provider: str) -> LLMRequest:
    model = "claude-sonnet-4-6" if provider == "anthropic" else "gpt-4o-mini"
    return LLMRequest(
        target=Target(provider=provider, model=model),
        api_key=KEY,
        messages=(Message(role="user", content="Write."),),
    )


class AnsweredAnthropic(anthropic_stream.Source):
    """The Messages API's own Source, its request answered by a :class:`Body`."""

    body: Body

    def open(self, client: Any, timeout_s: float) -> Any:
        return self.body

    async def aopen(self, client: Any, timeout_s: float) -> Any:
        return self.body


class AnsweredOpenAI(openai_stream.Source):
    """The Chat Completions Source, its request answered by a :class:`Body`."""

    body: Body

    def open(self, client: Any, timeout_s: float) -> Any:
        return self.body

    async def aopen(self, client: Any, timeout_s: float) -> Any:
        return self.body


def _source(provider: str, body: Body) -> AnsweredAnthropic | AnsweredOpenAI:
    source: AnsweredAnthropic | AnsweredOpenAI
    if provider == "anthropic":
        source = AnsweredAnthropic(AnthropicCall(_request(provider)))
    else:
        source = AnsweredOpenAI(OpenAICall(_request(provider)))
    source.body = body
    return source


def _hooks() -> RetryHooks:
    async def asleep(_seconds: float) -> None:
        return None

    return RetryHooks(sleep=lambda _s: None, asleep=asleep)


def _read(provider: str, body: Body, asynchronous: bool) -> tuple[list[str], Any]:
    """The pieces the loop handed out, and its last item or the failure."""
    source = _source(provider, body)
    classify = anthropic_classify if provider == "anthropic" else openai_classify
    pieces: list[str] = []
    if not asynchronous:
        try:
            for item in drive(source, None, _hooks(), classify):
                if isinstance(item, str):
                    pieces.append(item)
                else:
                    return pieces, item
        except LLMGenerateError as err:
            return pieces, err
        raise AssertionError("the stream ended with neither a response nor a failure")

    async def read() -> Any:
        try:
            async for item in adrive(source, None, _hooks(), classify):
                if isinstance(item, str):
                    pieces.append(item)
                else:
                    return item
        except LLMGenerateError as err:
            return err
        raise AssertionError("the stream ended with neither a response nor a failure")

    return pieces, asyncio.run(read())


TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\x00")
    | st.sampled_from(["\u2028", "\u0085", "\r", "\n", '"', "\\"]),
    min_size=1,
    max_size=30,
)


@st.composite
def cut_streams(draw: st.DrawFn) -> tuple[str, str, list[bytes], bool]:
    """(provider, the whole text, the body's chunks after the cut, whether the cut kept all)."""
    provider = draw(st.sampled_from(["anthropic", "openai"]))
    text = draw(TEXT)
    splits = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=4)))
    pieces = [text[a:b] for a, b in zip([0, *splits], [*splits, len(text)], strict=True) if a < b]
    events = anthropic_events(pieces) if provider == "anthropic" else openai_events(pieces)
    whole = b"".join(events)
    cut = draw(st.integers(0, len(whole)))
    kept = whole[:cut]
    bounds = sorted(draw(st.sets(st.integers(1, max(1, len(kept) - 1)), max_size=6)))
    chunks = [kept[a:b] for a, b in zip([0, *bounds], [*bounds, len(kept)], strict=True) if a < b]
    return provider, text, chunks, cut == len(whole)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut_streams(), st.booleans())
def test_a_stream_is_the_whole_answer_or_a_connection_failure(
    stream: tuple[str, str, list[bytes], bool], asynchronous: bool
) -> None:
    provider, text, chunks, whole = stream
    body = Body(chunks)
    pieces, last = _read(provider, body, asynchronous)
    handed = "".join(pieces)
    assert body.closed
    if isinstance(last, LLMResponse):
        # Only a stream that kept its terminator answers, and then with everything.
        assert last.text == handed == text
        assert last.finish_reason == "stop"
        return
    assert isinstance(last, LLMGenerateError)
    assert not whole, "a complete stream must answer"
    assert last.reason == "connection"
    assert last.partial_text == handed
    assert text.startswith(handed)
    assert KEY not in last.message


def test_the_terminator_alone_decides_for_both_providers() -> None:
    """The complete stream answers; the same stream without its last event fails, whatever
    came before it (the stop reason, the usage, the finish reason)."""
    for provider, events in (
        ("anthropic", anthropic_events(["a", "b"])),
        ("openai", openai_events(["a", "b"])),
    ):
        _, last = _read(provider, Body(events), asynchronous=False)
        assert isinstance(last, LLMResponse)
        _, cut = _read(provider, Body(events[:-1]), asynchronous=False)
        assert isinstance(cut, LLMGenerateError)
        assert (cut.reason, cut.partial_text) == ("connection", "ab")
