"""The Responses API side of ``FakeOpenAIServer``: every scripted answer (``reply``,
``reply_tool``, ``fail_midstream``, ...) is written once as a chat completion and, for a request
to ``/v1/responses``, turned into the ``response`` object the Responses API returns
(:func:`as_response`) or the events it streams (:func:`response_events`).

The mapping: the message's text is an ``output_text`` part of a ``message`` item, its refusal a
``refusal`` part, a tool call a ``function_call`` item, reasoning text a ``reasoning`` item's
summary; ``finish_reason`` ``length`` is ``status: incomplete`` with ``max_output_tokens``,
``content_filter`` is ``incomplete`` with ``content_filter``, anything else ``completed``; usage
becomes ``input_tokens`` / ``output_tokens`` with their details. A stream sends
``response.created``, the deltas (``response.reasoning_summary_text.delta``,
``response.output_text.delta``, ``response.refusal.delta``,
``response.function_call_arguments.delta``), then ``response.completed`` or
``response.incomplete`` carrying the whole response.
"""

from __future__ import annotations

from typing import Any

from scriptorium._testing.http import Answer, RecordedRequest, sse

__all__ = [
    "COUNT_SUFFIX",
    "as_response",
    "error_event",
    "is_responses",
    "response_events",
    "usage_of",
]

#: What a count request's path ends with (``/v1/responses/input_tokens``).
COUNT_SUFFIX = "/responses/input_tokens"
_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def is_responses(request: RecordedRequest) -> bool:
    """Whether ``request`` was sent to the Responses API (``.../responses``)."""
    return request.path.split("?", 1)[0].rstrip("/").endswith("/responses")


def usage_of(chat_usage: dict[str, Any] | None) -> dict[str, Any] | None:
    """A chat completion's usage as the Responses API reports it."""
    if chat_usage is None:
        return None
    prompt = int(chat_usage.get("prompt_tokens", 0))
    completion = int(chat_usage.get("completion_tokens", 0))
    cached = (chat_usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    reasoning = (chat_usage.get("completion_tokens_details") or {}).get("reasoning_tokens", 0)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": prompt + completion,
    }


def as_response(chat: dict[str, Any]) -> dict[str, Any]:
    """The ``response`` object a chat completion ``chat`` stands for (see the module)."""
    choice = chat["choices"][0]
    message = choice["message"]
    finish = choice.get("finish_reason")
    output: list[dict[str, Any]] = []
    thought = message.get("reasoning_content")
    if isinstance(thought, str) and thought:
        summary = [{"type": "summary_text", "text": thought}]
        output.append({"id": "rs_fake", "type": "reasoning", "summary": summary})
    calls = message.get("tool_calls")
    if calls:
        function = calls[0]["function"]
        output.append(
            {
                "id": "fc_fake",
                "type": "function_call",
                "call_id": calls[0].get("id", "call_fake"),
                "name": function.get("name", ""),
                "arguments": function.get("arguments", ""),
                "status": "completed",
            }
        )
    else:
        content: list[dict[str, Any]] = []
        if message.get("content") is not None:
            content.append({"type": "output_text", "text": message["content"], "annotations": []})
        if message.get("refusal"):
            content.append({"type": "refusal", "refusal": message["refusal"]})
        output.append(
            {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": content,
            }
        )
    reason = _INCOMPLETE.get(finish) if isinstance(finish, str) else None
    return {
        "id": str(chat.get("id", "resp_fake")).replace("chatcmpl", "resp"),
        "object": "response",
        "created_at": chat.get("created", 1_700_000_000),
        "status": "incomplete" if reason else "completed",
        "incomplete_details": {"reason": reason} if reason else None,
        "error": None,
        "model": chat.get("model"),
        "output": output,
        "store": False,
        "usage": usage_of(chat.get("usage")),
    }


def _delta_event(response: dict[str, Any]) -> str:
    items = response["output"]
    if any(item["type"] == "function_call" for item in items):
        return "response.function_call_arguments.delta"
    message = next((item for item in items if item["type"] == "message"), None)
    parts = [] if message is None else message["content"]
    if parts and all(part["type"] == "refusal" for part in parts):
        return "response.refusal.delta"
    return "response.output_text.delta"


def response_events(
    response: dict[str, Any],
    pieces: list[str],
    pace_s: float,
    tail: list[tuple[float, bytes]] | None = None,
) -> Answer:
    """``response`` as the events a streaming request gets, its text cut in ``pieces``;
    ``tail``, when given, replaces the ending event (an error event, a reset)."""
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    parts: list[tuple[float, bytes]] = [
        (0.0, sse("response.created", {"type": "response.created", "response": started}))
    ]
    reasoning = next((item for item in response["output"] if item["type"] == "reasoning"), None)
    if reasoning is not None:
        thought = reasoning["summary"][0]["text"]
        for piece in (thought[i : i + 8] for i in range(0, len(thought), 8)):
            event = {
                "type": "response.reasoning_summary_text.delta",
                "item_id": "rs_fake",
                "output_index": 0,
                "summary_index": 0,
                "delta": piece,
            }
            parts.append((pace_s, sse(event["type"], event)))
    kind = _delta_event(response)
    index = len(response["output"]) - 1
    for piece in pieces:
        event = {
            "type": kind,
            "item_id": response["output"][-1]["id"],
            "output_index": index,
            "content_index": 0,
            "delta": piece,
        }
        parts.append((pace_s, sse(kind, event)))
    if tail is not None:
        return Answer(parts=(*parts, *tail), content_type="text/event-stream")
    ending = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    parts.append((0.0, sse(ending, {"type": ending, "response": response})))
    return Answer(parts=tuple(parts), content_type="text/event-stream")


def error_event(error: dict[str, Any]) -> bytes:
    """An ``error`` event carrying ``error`` (``{"message", "type", "code"}``)."""
    return sse("error", {"type": "error", **error})
