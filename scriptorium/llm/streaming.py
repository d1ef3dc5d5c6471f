"""Streaming at the LLM boundary: the optional ``stream`` / ``astream`` methods of a client, and
the one reading loop every SDK adapter streams through.

A streaming client yields the text as it arrives (``str`` chunks) and then, as its last item, the
complete :class:`LLMResponse` (whose ``text`` is what the chunks add up to; usage, finish reason,
attempts and metadata exactly as ``generate`` would report them). A client that ends without a
response is taken at its word: the response is the chunks joined. Reasoning the model writes
before its answer comes as :class:`~scriptorium.llm.client.ReasoningChunk` items (a ``str``
subclass), which add up to the response's ``reasoning``, never to its text.

Retries belong to the client and happen only before its first chunk; once text has been handed
out a failure is final (``LLMGenerateError``; the run's driver fills in ``partial_text``).

:func:`stream_of` and :func:`astream_of` stream any client: one with ``stream``/``astream`` streams
for real, one with only ``generate``/``agenerate`` is streamed as one chunk.

:func:`drive` and :func:`adrive` are the loop of every SDK adapter's ``stream``/``astream``: open
the request, read it to its first text inside one retried attempt, hand out the rest, and end.
A provider gives only a :class:`StreamSource` (how to open, its :class:`Fold` of events into text
and a body, how a body is read), so the rules of how a stream ends are written here once:

- a body that is not an event stream (the content type says so) is read whole: a complete answer
  when it is one (a server that ignored ``stream``), else ``invalid_response``; never an empty
  output;
- a stream that ends before its fold saw the terminator (the provider's "this answer is complete"
  event) is a ``connection`` failure carrying the text handed out so far, also when that is none;
- a failure once text was handed out is never retried: it carries the text so far.

Those rules live in two objects without I/O that both loops share: ``_Reading`` (one attempt's
chunks in, text out) and ``_Rest`` (the stream once its attempt succeeded: the content deadline,
late failures, the ending). :func:`drive` and :func:`adrive` only open, read, bound and close.

Events are read from the body's bytes by :class:`EventDecoder`, which splits lines at CR, LF and
CRLF only, as server-sent events are defined (never at U+2028 or U+0085, which JSON strings may
hold raw).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import scriptorium.llm.deadline as deadline
from scriptorium._journal import load_json
from scriptorium.errors import LLMGenerateError
from scriptorium.llm.client import (
    AsyncClient,
    AsyncStreamingClient,
    Client,
    ReasoningChunk,
    StreamingClient,
    StreamItem,
    supports,
)
from scriptorium.llm.model import LLMRequest, LLMResponse
from scriptorium.redaction import redact

__all__ = [
    "MAX_EVENT_BYTES",
    "AsyncStreamingClient",
    "ErrorEvent",
    "EventDecoder",
    "EventReader",
    "Fold",
    "ReasoningChunk",
    "StreamItem",
    "StreamSource",
    "StreamingClient",
    "adrive",
    "astream_of",
    "chunked",
    "drive",
    "event_json",
    "is_event_stream",
    "response_pieces",
    "sse_events",
    "stream_of",
]


def chunked(text: str, pieces: int = 4) -> list[str]:
    """``text`` cut into about ``pieces`` non-empty chunks (fewer for short texts), in order.

    Fakes and recordings stream with it, so code under test sees text arrive in several parts.
    """
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def response_pieces(response: LLMResponse, pieces: int = 1) -> list[str]:
    """A complete response as a stream hands it out: its reasoning (as
    :class:`ReasoningChunk` items), then its text, each in about ``pieces`` chunks (the response
    itself not included). Fakes, recordings and clients that cannot stream use it."""
    reasoning = [ReasoningChunk(p) for p in chunked(response.reasoning or "", pieces)]
    return [*reasoning, *chunked(response.text, pieces)]


def stream_of(client: Any, request: LLMRequest) -> Iterator[StreamItem]:
    """``client``'s stream for ``request``: its own ``stream`` when it has one, else its
    ``generate`` answer as one chunk."""
    if supports(client, StreamingClient):
        return iter(client.stream(request))
    if not supports(client, Client):
        raise LLMGenerateError("the client has no generate() or stream()", reason="config")
    return _one_chunk(client, request)


def _one_chunk(client: Client, request: LLMRequest) -> Iterator[StreamItem]:
    response = client.generate(request)
    if isinstance(response, LLMResponse):
        yield from response_pieces(response)
    yield response


def astream_of(client: Any, request: LLMRequest) -> AsyncIterator[StreamItem]:
    """The async twin of :func:`stream_of`: ``astream``, else ``agenerate`` as one chunk, else
    ``generate`` in a worker thread as one chunk."""
    if supports(client, AsyncStreamingClient):
        return aiter(client.astream(request))
    return _aone_chunk(client, request)


async def _aone_chunk(client: Any, request: LLMRequest) -> AsyncIterator[StreamItem]:
    if supports(client, AsyncClient):
        response = await client.agenerate(request)
    else:
        if not supports(client, Client):
            raise LLMGenerateError("the client has no generate() or astream()", reason="config")
        response = await asyncio.to_thread(client.generate, request)
    if isinstance(response, LLMResponse):
        for piece in response_pieces(response):
            yield piece
    yield response


# --- the reading loop every SDK adapter shares ---------------------------------------------------

#: The longest event accepted (a line without its end, or data lines adding up): more is a broken
#: stream, not something to buffer without bound.
MAX_EVENT_BYTES = 16 * 1024 * 1024

R = TypeVar("R")


class ErrorEvent(Exception):
    """An error the server reported inside a 200 event stream. ``body`` is the error object as
    sent; the provider's classifier says what it stands for (a rate limit, an overload, ...)."""

    def __init__(self, body: Any, message: str = "an error event in the stream") -> None:
        super().__init__(message)
        self.body = body


def _invalid(message: str) -> LLMGenerateError:
    return LLMGenerateError(message, reason="invalid_response", retryable=False, http_status=200)


def event_json(data: str) -> dict[str, Any]:
    """An event's data as the JSON object it must be; ``invalid_response`` when it is not one."""
    try:
        value = load_json(data)
    except ValueError as err:
        raise _invalid("a stream event's data is not JSON") from err
    if not isinstance(value, dict):
        raise _invalid("a stream event's data is not a JSON object")
    return value


def is_event_stream(headers: Mapping[str, str]) -> bool:
    """Whether a 200's headers say its body is an event stream."""
    return "text/event-stream" in str(headers.get("content-type", "")).lower()


class EventReader(Protocol):
    """Events from a stream's bytes as they arrive: ``(event name or None, data)`` pairs, each
    data a provider event's JSON text. Server-sent events (:class:`EventDecoder`) for most
    providers; a platform with its own framing (Bedrock's binary event stream) gives its own."""

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        """The events completed by ``chunk``."""
        ...

    def end(self) -> list[tuple[str | None, str]]:
        """The events the end of the body completes."""
        ...


def sse_events(headers: Mapping[str, str]) -> EventDecoder | None:
    """The reader of a server-sent event stream, or None when the headers say the body is not one
    (what most providers' :meth:`StreamSource.events` answer)."""
    return EventDecoder() if is_event_stream(headers) else None


class EventDecoder:
    """Server-sent events from a body's bytes as they arrive: ``(event name or None, data)``.

    Lines end at CR, LF or CRLF (a CR at the end of one chunk may be a CRLF split in two); an
    empty line dispatches the event; ``:`` lines are comments; ``data`` lines add up, joined by
    LF. An event cut off by the end of the body is never dispatched. Each line is strict UTF-8.
    """

    __slots__ = ("_buffer", "_data", "_name", "_size")

    def __init__(self) -> None:
        self._buffer = b""
        self._name: str | None = None
        self._data: list[str] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        """The events completed by ``chunk``."""
        buffer = self._buffer + chunk
        events: list[tuple[str | None, str]] = []
        start = 0
        size = len(buffer)
        while start < size:
            cr = buffer.find(b"\r", start)
            lf = buffer.find(b"\n", start)
            if cr < 0 and lf < 0:
                break
            if cr < 0 or (0 <= lf < cr):
                end, after = lf, lf + 1
            elif cr + 1 == size:
                break  # a CR last in the chunk: wait to see whether an LF follows
            else:
                end = cr
                after = cr + 2 if buffer[cr + 1 : cr + 2] == b"\n" else cr + 1
            event = self._line(buffer[start:end])
            if event is not None:
                events.append(event)
            start = after
        self._buffer = buffer[start:]
        if len(self._buffer) + self._size > MAX_EVENT_BYTES:
            raise _invalid(f"a stream event is longer than {MAX_EVENT_BYTES} bytes")
        return events

    def end(self) -> list[tuple[str | None, str]]:
        """The events the end of the body completes: a CR held back as the last byte was a line
        end after all. What is left after it (a line or an event cut off) is dropped."""
        held, self._buffer = self._buffer, b""
        if not held.endswith(b"\r"):
            return []
        event = self._line(held[:-1])
        return [] if event is None else [event]

    def _line(self, raw: bytes) -> tuple[str | None, str] | None:
        if not raw:
            if not self._data:
                self._name = None
                return None
            event = (self._name, "\n".join(self._data))
            self._name, self._data, self._size = None, [], 0
            return event
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise _invalid("the event stream is not UTF-8") from err
        if line.startswith(":"):
            return None
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
            self._size += len(raw)
        elif field == "event":
            self._name = value
        return None


class Fold(Protocol):
    """A provider's reading of one stream: events in, text pieces out, and at the end the body a
    non-streamed reply would have had (see :class:`StreamSource`)."""

    #: Whether the terminator (the event saying the answer is complete) has been read.
    complete: bool

    def add(self, name: str | None, data: str) -> str | Sequence[str] | None:
        """Take one event; the text it adds to the output (None or "" for none), a
        :class:`ReasoningChunk` for reasoning, or several pieces in order when one event carries
        more than one (reasoning then text in the same chunk). Raises :class:`ErrorEvent` for an
        error the server reported in the stream."""
        ...

    def flush(self) -> str:
        """Text held back until the answer is complete (read only once it is)."""
        ...


class StreamSource(Protocol[R]):
    """What one provider gives the shared loop for one request. ``R`` is the provider's reading
    of a 200 (what its ``response`` turns into the ``LLMResponse``)."""

    provider: str
    model: str
    key: str

    def retry_args(self, hooks: Any) -> dict[str, Any]:
        """The retry loop's arguments for this request."""
        ...

    def open(self, client: Any, timeout_s: float) -> Any:
        """Send the request; its HTTP response, body unread (``headers``, ``iter_bytes``,
        ``read``, ``close``). Error statuses raise, as the SDK raises them."""
        ...

    async def aopen(self, client: Any, timeout_s: float) -> Any:
        """The async twin of :meth:`open` (``aiter_bytes``, ``aread``, ``aclose``)."""
        ...

    def fold(self) -> Fold:
        """A fresh fold for one attempt."""
        ...

    def events(self, headers: Mapping[str, str]) -> EventReader | None:
        """The reader of a 200's events, or None when its headers say it is not a stream (it is
        then read whole, :meth:`read_body`): :func:`sse_events` for a server-sent stream."""
        ...

    def folded(self, fold: Any, headers: Mapping[str, str]) -> R:
        """The reading of a complete stream: its fold's body, as a 200 would have been read."""
        ...

    def read_body(self, content: bytes, headers: Mapping[str, str]) -> R:
        """A 200 that is not an event stream, read as a complete answer; ``invalid_response``
        when it is not one."""
        ...

    def response(self, result: R, attempts: int, elapsed_s: float) -> Any:
        """The ``LLMResponse`` of a reading."""
        ...


class _Reading:
    """One attempt's reading of an event stream, without the I/O: the body's chunks go in
    (:meth:`take`), text and reasoning pieces come out; the answer text handed out so far is
    kept for the errors (reasoning is not part of it)."""

    __slots__ = ("decoder", "fold", "head", "pending", "sent")

    def __init__(self, fold: Fold, decoder: EventReader) -> None:
        self.fold = fold
        self.decoder = decoder
        self.sent: list[str] = []
        #: The pieces read inside the attempt (up to the first text), handed out after it.
        self.head: list[str] = []
        #: A failure met in the same chunk as text before it: raised once that text is out.
        self.pending: Exception | None = None

    def take(self, chunk: bytes | None) -> list[str]:
        """The text of the events ``chunk`` completes (None: the body ended), up to the
        terminator; the pieces are counted as handed out. A failure after text in the same
        chunk waits in ``pending`` (how the bytes were cut must not decide whether the text
        came before the failure)."""
        decoder, fold = self.decoder, self.fold
        pieces: list[str] = []
        try:
            for name, data in decoder.feed(chunk) if chunk is not None else decoder.end():
                if fold.complete:
                    break
                piece = fold.add(name, data)
                if isinstance(piece, str):
                    if piece:
                        pieces.append(piece)
                elif piece:
                    pieces.extend(p for p in piece if p)
        except Exception as err:
            if not pieces:
                raise
            self.pending = err
        self.sent.extend(p for p in pieces if not isinstance(p, ReasoningChunk))
        return pieces

    def failed(self) -> Exception | None:
        """The pending failure, once (see :meth:`take`)."""
        err, self.pending = self.pending, None
        return err

    def opened(self, chunk: bytes | None) -> bool:
        """Take a chunk inside the attempt; whether the attempt is over (text came, the
        terminator came, or the body ended)."""
        self.head = self.take(chunk)
        return bool(self.head) or self.fold.complete or chunk is None

    def partial(self) -> str:
        return "".join(self.sent)


@dataclass
class _Opened:
    """What one successful attempt gives: the response and its reading, or the reading of a
    body that was not a stream (``answered``)."""

    response: Any
    reading: _Reading | None = None
    chunks: Any = None
    answered: Any = None


def _reading(source: StreamSource[Any], response: Any) -> _Reading | None:
    """The reading of a response just opened, or None when its body is not a stream and is read
    whole (then :func:`_answered`)."""
    decoder = source.events(response.headers)
    return None if decoder is None else _Reading(source.fold(), decoder)


def _answered(source: StreamSource[Any], response: Any, content: bytes) -> _Opened:
    """An attempt whose body was not a stream: its whole content read as the answer."""
    return _Opened(response, answered=source.read_body(content, response.headers))


def _ended_early(source: StreamSource[Any], partial: str, attempts: int) -> LLMGenerateError:
    message = redact(
        f"{source.provider} {source.model}: connection (the stream ended without its "
        "terminator)" + (" after the stream began" if partial else ""),
        (source.key, *getattr(source, "secrets", ())),
    )
    return LLMGenerateError(
        message,
        reason="connection",
        retryable=True,
        attempts=attempts,
        provider=source.provider,
        model=source.model,
        partial_text=partial,
    )


@dataclass(slots=True)
class _Rest:
    """A stream after its opening, without the I/O: what to hand out first, whether another
    chunk is to be read, when content is due, what a failure means, and how the stream ends. The
    drivers only read the chunks (and close the response)."""

    source: StreamSource[Any]
    classify: Any
    opened: _Opened
    attempts: int
    started: float
    #: The longest the stream may go without content once it began: the run's ``timeout_s``.
    gap: float
    clock: Callable[[], float]
    #: The last chunk read (None: the body ended).
    chunk: bytes | None = b""
    #: When content is due (on ``clock``), from the moment the head is out.
    content_by: float = field(init=False, default=0.0)

    @property
    def chunks(self) -> Any:
        """The body's chunks, as the attempt left them."""
        return self.opened.chunks

    def head(self) -> Iterator[str]:
        """The pieces read inside the attempt (none for a body read whole); once they are out
        (the consumer took the last), content is due within ``gap``."""
        reading = self.opened.reading
        if reading is not None:
            yield from reading.head
        self.content_by = self.clock() + self.gap

    def wanting(self) -> bool:
        """Whether another chunk is to be read. Raises the failure met in a chunk after the
        text before it, once that text is out."""
        reading = self.opened.reading
        if reading is None:
            return False
        late = reading.failed()
        if late is not None:
            raise self.broken(late) from late
        return self.chunk is not None and not reading.fold.complete

    def took(self, chunk: bytes | None) -> list[str]:
        """The pieces of ``chunk`` (None: the body ended). Keep-alive pings and empty events do
        not move the content deadline; content does."""
        assert self.opened.reading is not None, "a body read whole has no chunks"
        self.chunk = chunk
        pieces = self.opened.reading.take(chunk)
        if pieces:
            self.content_by = self.clock() + self.gap
        elif self.clock() >= self.content_by:
            raise self.quiet()
        return pieces

    def quiet(self) -> deadline.DeadlineExceeded:
        """The failure of a stream that went without content past its deadline."""
        return deadline.DeadlineExceeded(f"no content for {self.gap:g}s after the stream began")

    def broken(self, err: Exception) -> LLMGenerateError:
        """What ``err``, met once the stream began, ends it with (never retried; the text so far
        kept)."""
        # The adapters' machinery, loaded by the adapters that stream, never by the use case
        # (which imports this module for stream_of).
        from scriptorium.llm.stream_failure import broken_stream

        source = self.source
        reading = self.opened.reading
        return broken_stream(
            err,
            "" if reading is None else reading.partial(),
            provider=source.provider,
            model=source.model,
            key=source.key,
            secrets=getattr(source, "secrets", ()),
            attempts=self.attempts,
            classify=self.classify,
        )

    def end(self) -> Iterator[StreamItem]:
        """The last items once the body is read and closed: a complete answer read whole as its
        pieces and itself; else the text a complete stream held back, then its response (a stream
        cut short fails instead)."""
        source, opened = self.source, self.opened
        reading = opened.reading
        if reading is None:
            yield from _whole(source.response(opened.answered, self.attempts, self._since()))
            return
        if not reading.fold.complete:
            raise _ended_early(source, reading.partial(), self.attempts)
        result = source.folded(reading.fold, opened.response.headers)
        tail = reading.fold.flush()
        if tail:
            yield tail
        yield source.response(result, self.attempts, self._since())

    def _since(self) -> float:
        return time.perf_counter() - self.started


def drive(
    source: StreamSource[Any], client: Any, hooks: Any, classify: Any
) -> Iterator[StreamItem]:
    """The stream of ``source``'s request on ``client``: text pieces, then the response (see the
    module for the rules). ``hooks`` drive the retry loop; ``classify`` is the provider's."""
    from scriptorium.llm.retry.loop import call_with_retry  # the adapters' (see _Rest.broken)

    started = time.perf_counter()

    def attempt(timeout_s: float) -> _Opened:
        response = source.open(client, timeout_s)
        try:
            reading = _reading(source, response)
            if reading is None:
                return _answered(source, response, response.read())
            chunks = iter(response.iter_bytes())
            while not reading.opened(next(chunks, None)):
                pass
            return _Opened(response, reading, chunks)
        except BaseException:
            response.close()
            raise

    args = source.retry_args(hooks)
    opened, attempts, _ = call_with_retry(attempt, classify, **args)
    rest = _Rest(source, classify, opened, attempts, started, _gap(args), time.monotonic)
    try:
        yield from rest.head()
        while rest.wanting():
            try:
                with deadline.bounded(rest.content_by):
                    chunk = next(rest.chunks, None)
                pieces = rest.took(chunk)
            except Exception as err:
                raise rest.broken(err) from err
            yield from pieces
    finally:
        opened.response.close()
    yield from rest.end()


async def adrive(
    source: StreamSource[Any], client: Any, hooks: Any, classify: Any
) -> AsyncIterator[StreamItem]:
    """The async twin of :func:`drive`."""
    from scriptorium.llm.retry.loop import acall_with_retry  # the adapters' (see _Rest.broken)

    started = time.perf_counter()

    async def attempt(timeout_s: float) -> _Opened:
        response = await source.aopen(client, timeout_s)
        try:
            reading = _reading(source, response)
            if reading is None:
                return _answered(source, response, await response.aread())
            chunks = aiter(response.aiter_bytes())
            while not reading.opened(await anext(chunks, None)):
                pass
            return _Opened(response, reading, chunks)
        except BaseException:
            await response.aclose()
            raise

    args = source.retry_args(hooks)
    opened, attempts, _ = await acall_with_retry(attempt, classify, **args)
    rest = _Rest(
        source, classify, opened, attempts, started, _gap(args), asyncio.get_running_loop().time
    )
    try:
        for piece in rest.head():
            yield piece
        while rest.wanting():
            try:
                try:
                    async with asyncio.timeout_at(rest.content_by):
                        chunk = await anext(rest.chunks, None)
                except TimeoutError as late:
                    raise rest.quiet() from late
                pieces = rest.took(chunk)
            except Exception as err:
                raise rest.broken(err) from err
            for piece in pieces:
                yield piece
    finally:
        await opened.response.aclose()
    for item in rest.end():
        yield item


def _gap(args: Mapping[str, Any]) -> float:
    """The longest a stream may go without content once it began: the run's ``timeout_s``."""
    return float(args["policy"].timeout_s)


def _whole(response: LLMResponse) -> Iterator[StreamItem]:
    """A complete answer that came as one body: its reasoning and its text as one piece each,
    then the response."""
    yield from response_pieces(response)
    yield response
