"""``POST /v1/runs`` with ``Accept: text/event-stream``: the run as server-sent events.

Events, each ``event: <name>`` and one ``data:`` line of JSON:

- ``attempt``: an ``AttemptStarted`` (``{"type": "attempt_started", "attempt", "kind"}``);
- ``reasoning``: a ``ReasoningDelta`` (``{"type": "reasoning_delta", "text", "attempt"}``), the
  model's reasoning as the provider returns it, before the text it leads to;
- ``text``: a ``TextDelta`` (``{"type": "text_delta", "text", "attempt"}``);
- ``partial``: a ``PartialValue`` (``{"type": "partial_value", "value", "attempt"}``);
- ``result``: the ``RunResult``, the very JSON a plain ``POST /v1/runs`` answers;
- ``error``: the error body of the status table (``{"error": {"code", "message", ...}}``).

Everything that fails before the model's first text or reasoning (a bad request, a missing key,
the provider refusing or staying overloaded through every retry) is an ordinary error answer with
its status: the 200 and its headers are sent only once the first text or reasoning is there, so
a client sees a failure it can act on as the status it would get without streaming. From then on,
a failure is an ``error`` event and the stream ends. ``?require_valid=true`` with an invalid
output sends the ``result`` and then an ``output_invalid`` ``error`` event. A client that goes away
closes the run's connection to the provider. The run holds one of the server's run slots until its
last event.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import StreamingResponse

from scriptorium.errors import OutputInvalidError, ScriptoriumError
from scriptorium.httpapi.errors import ApiError, error_body
from scriptorium.httpapi.responses import request_id
from scriptorium.usecase.offload import off_loop
from scriptorium.usecase.prepare import heavy_to_prepare

if TYPE_CHECKING:
    from scriptorium.httpapi.service import Service
    from scriptorium.usecase.model import RunRequest
    from scriptorium.usecase.stream import AsyncRunStream

__all__ = ["EVENT_NAMES", "stream_run", "wants_events"]

#: The SSE event name of each stream event type.
EVENT_NAMES = {
    "attempt_started": "attempt",
    "reasoning_delta": "reasoning",
    "text_delta": "text",
    "partial_value": "partial",
}
MEDIA_TYPE = "text/event-stream"


def wants_events(request: Request) -> bool:
    """Whether the caller asked for server-sent events (``Accept: text/event-stream``)."""
    return MEDIA_TYPE in request.headers.get("accept", "")


def _frame(name: str, data: str) -> bytes:
    # JSON holds no raw newline, so one data line carries the whole event.
    return f"event: {name}\ndata: {data}\n\n".encode()


def _error_frame(err: Exception, rid: str) -> bytes:
    if isinstance(err, ScriptoriumError | ApiError):
        body = error_body(err, rid)
    else:
        internal = ApiError(500, "internal", f"unexpected {type(err).__name__}; see request {rid}")
        body = error_body(internal, rid)
    return _frame("error", json.dumps(body, ensure_ascii=False))


async def stream_run(
    request: Request, service: Service, run: RunRequest, *, require_valid: bool
) -> StreamingResponse:
    """The streamed answer of one run (see the module doc)."""
    rid = request_id(request)
    stack = AsyncExitStack()
    await stack.enter_async_context(service.slot())
    try:
        # Opening the stream prepares the run: a heavy one in a worker thread, as arun does.
        stream = await off_loop(heavy_to_prepare(run), lambda: service.engine.astream(run))
        stack.push_async_callback(stream.aclose)
        head = await _until_text(stream)
    except BaseException:
        await stack.aclose()
        raise
    return StreamingResponse(
        _frames(stream, head, stack, rid, require_valid),
        media_type=MEDIA_TYPE,
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


async def _until_text(stream: AsyncRunStream) -> list[Any]:
    """The events up to and including the first that is not an attempt announcement; what fails
    before it is raised here, before any answer is sent."""
    head: list[Any] = []
    async for event in stream:
        head.append(event)
        if event.type != "attempt_started":
            break
    return head


async def _frames(
    stream: AsyncRunStream, head: list[Any], stack: AsyncExitStack, rid: str, require_valid: bool
) -> AsyncIterator[bytes]:
    async with stack:
        try:
            for event in head:
                frame = _event_frame(event)
                if frame is not None:
                    yield frame
            async for event in stream:
                frame = _event_frame(event)
                if frame is not None:
                    yield frame
            result = await stream.result()
            yield _frame("result", result.model_dump_json(by_alias=True))
            if require_valid:
                try:
                    result.raise_for_validation()
                except OutputInvalidError as err:
                    yield _error_frame(err, rid)
        except Exception as err:
            yield _error_frame(err, rid)


def _event_frame(event: Any) -> bytes | None:
    name = EVENT_NAMES.get(event.type)
    if name is None:  # ``done``: its result is sent as the ``result`` event
        return None
    return _frame(name, event.model_dump_json())
