"""One request's way through the Responses API: :class:`ResponsesCall` (the chat
:class:`~scriptorium.llm.openai.call.Call` with this API's body, path and reader) and
:func:`read_response`, the one reader of a ``response`` object, for a reply, a folded stream and a
batch row alike.

Endings: ``completed`` is ``stop``; ``incomplete`` is read by ``incomplete_details.reason``
(``max_output_tokens`` is ``length``, ``content_filter`` is ``refusal`` as on chat, any other
reason is kept as the provider's own string); an output item that is a refusal makes the answer a
``refusal`` whatever the status; ``failed`` (and an ``error`` object) is the server's failure,
classified like an error event in a stream. Usage is split into token classes by the same
function as on chat (:func:`~scriptorium.llm.openai.call.token_usage`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scriptorium.errors import LLMGenerateError, describe
from scriptorium.llm.adapter import forced_tool_finish
from scriptorium.llm.model import LLMRequest
from scriptorium.llm.openai.api import PROVIDER, RESPONSES_PATH
from scriptorium.llm.openai.call import (
    FINISH,
    RESPONSES_USAGE,
    Call,
    Completion,
    answer_usage,
)
from scriptorium.llm.openai.responses_body import (
    build_responses_params,
    responses_ignored,
    responses_reasoning,
)
from scriptorium.llm.streaming import ErrorEvent

__all__ = ["INCOMPLETE", "ResponsesCall", "read_response"]

#: ``incomplete_details.reason`` as scriptorium's finish reasons (any other passes through).
INCOMPLETE = {"max_output_tokens": "length", "content_filter": FINISH["content_filter"]}


def _invalid(message: str) -> LLMGenerateError:
    return LLMGenerateError(message, reason="invalid_response", provider=PROVIDER)


def _items(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    output = body.get("output")
    if output is None:
        return []
    if not isinstance(output, list):
        raise _invalid("openai: the response's output is not a list")
    return [item for item in output if isinstance(item, dict)]


def _ending(body: Mapping[str, Any]) -> tuple[str, str]:
    """The provider's ending and scriptorium's finish reason for it."""
    status = body.get("status")
    if status == "incomplete":
        details = body.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        raw = reason if isinstance(reason, str) else "incomplete"
        return raw, INCOMPLETE.get(raw, raw)
    if status in (None, "completed"):
        return "completed", "stop"
    return str(status), str(status)


def read_response(raw: bytes, strategy: str | None) -> tuple[Completion, str | None]:
    """Text, finish reason, usage (tokens only) and metadata from a ``response`` object, and
    its reasoning summary (None: none); ``invalid_response`` when the body is not a response,
    :class:`~scriptorium.llm.streaming.ErrorEvent` when it is a failed one."""
    try:
        body = json.loads(raw)
    except ValueError as err:
        raise _invalid(f"openai: the 200 response is not JSON ({describe(err)})") from err
    if not isinstance(body, dict) or not isinstance(body.get("output"), list):
        raise _invalid("openai: the 200 response is not a Responses API response")
    if body.get("status") == "failed" or isinstance(body.get("error"), dict):
        error = body.get("error")
        raise ErrorEvent(error if isinstance(error, dict) else {"message": "the response failed"})
    texts: list[str] = []
    refusals: list[str] = []
    summaries: list[str] = []
    arguments: str | None = None
    for item in _items(body):
        kind = item.get("type")
        if kind == "message":
            content = item.get("content")
            for part in content if isinstance(content, list) else ():
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "output_text" and isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
                    refusals.append(part["refusal"])
        elif kind == "reasoning":
            summary = item.get("summary")
            for part in summary if isinstance(summary, list) else ():
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    summaries.append(part["text"])
        elif kind == "function_call" and arguments is None:
            if not isinstance(item.get("arguments"), str):
                raise _invalid("openai: the function call has no arguments")
            arguments = item["arguments"]
    raw_finish, finish = _ending(body)
    text = "".join(texts)
    metadata: dict[str, Any] = {}
    if isinstance(body.get("id"), str):
        metadata["response_id"] = body["id"]
    if strategy == "tool" and arguments is not None:
        text = arguments
        finish = forced_tool_finish(finish, True)
    if raw_finish != "completed":
        metadata["provider_finish_reason"] = raw_finish
    if refusals:
        refusal = "".join(refusals)
        finish = "refusal"
        metadata["refusal"] = refusal
        text = text or refusal
    usage = answer_usage(body, RESPONSES_USAGE, metadata)
    reasoning = "\n\n".join(summaries) if summaries else None
    return (text, finish, usage, metadata), reasoning


class ResponsesCall(Call):
    """One request's translation to and from the Responses API (see the module)."""

    api = "responses"
    path = RESPONSES_PATH

    def build(self, request: LLMRequest) -> tuple[dict[str, Any], str | None]:
        return build_responses_params(request, media_wire=self.wire)

    def parse(self, raw: bytes) -> tuple[Completion, str | None]:
        return read_response(raw, self.strategy)

    def ignored(self) -> tuple[str, ...]:
        request = self.request
        return responses_ignored(request.settings, responses_reasoning(request))
