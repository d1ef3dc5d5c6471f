"""The repair boundary: the OutputRepairer port and the default repairer that asks the model again."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from scriptorium.llm.client import AsyncClient, Client
from scriptorium.llm.model import LLMRequest, LLMResponse
from scriptorium.llm.streaming import StreamItem, astream_of, stream_of
from scriptorium.prompt.model import Message
from scriptorium.usecase.model import PreparedRun
from scriptorium.validate.model import ValidationIssue

__all__ = [
    "AsyncOutputRepairer",
    "AsyncStreamingRepairer",
    "DefaultOutputRepairer",
    "OutputRepairer",
    "RepairContext",
    "RepairResult",
    "StreamingRepairer",
]

# Issues listed in a repair request; beyond this the model gets a count, so a pathological output
# cannot make the repair prompt larger than the thing being repaired.
_MAX_ISSUES_SHOWN = 20


class RepairContext(BaseModel):
    """What a repairer gets: the original request (with the key, for the client), the last failed
    output and its issues, and which repair this is (1-based)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    prepared: PreparedRun
    request: LLMRequest
    previous_output: str
    issues: tuple[ValidationIssue, ...]
    attempt: int


class RepairResult(BaseModel):
    """A repaired generation; it is validated again by the runner."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    response: LLMResponse


@runtime_checkable
class OutputRepairer(Protocol):
    """Turns an invalid output into another attempt. Raise ``LLMGenerateError`` when it cannot."""

    def repair(self, context: RepairContext) -> RepairResult:
        """A new generation meant to satisfy the contract."""
        ...


# The optional capabilities of a repairer, asked with ``llm.client.supports`` (not getattr).


@runtime_checkable
class AsyncOutputRepairer(Protocol):
    """A repairer with an async twin of ``repair`` (else an async run calls ``repair`` in a worker
    thread)."""

    async def arepair(self, context: RepairContext) -> RepairResult:
        """The async twin of :meth:`OutputRepairer.repair`."""
        ...


@runtime_checkable
class StreamingRepairer(Protocol):
    """A repairer that streams its generation (else a streamed run shows the repair as one
    chunk): text chunks, then the complete response, as a streaming client yields them."""

    def stream(self, context: RepairContext) -> Iterator[StreamItem]:
        """The repair generation, as it is written."""
        ...


@runtime_checkable
class AsyncStreamingRepairer(Protocol):
    """The async twin of :class:`StreamingRepairer`."""

    def astream(self, context: RepairContext) -> AsyncIterator[StreamItem]:
        """The repair generation, as it is written."""
        ...


def repair_request(context: RepairContext) -> LLMRequest:
    """The original request plus the last failed output and what was wrong with it.

    Only the last failed output is shown, never every earlier one, so a repair costs about what the
    first attempt cost instead of growing with each try.
    """
    shown = context.issues[:_MAX_ISSUES_SHOWN]
    lines = [f"- {i.path or '/'}: {i.message} ({i.keyword})" for i in shown]
    if len(context.issues) > len(shown):
        lines.append(f"- ... and {len(context.issues) - len(shown)} more")
    wants = "JSON matching the required schema" if context.prepared.output.schema_ else "valid JSON"
    instruction = (
        "Your previous answer could not be accepted:\n"
        + "\n".join(lines)
        + f"\n\nReply again with only {wants}: no prose, no code fences."
    )
    if context.prepared.output.schema_ is not None and context.request.structured_output is None:
        instruction += "\nSchema:\n" + json.dumps(context.prepared.output.schema_)
    messages = (
        *context.request.messages,
        Message(role="assistant", content=context.previous_output or "(empty)"),
        Message(role="user", content=instruction),
    )
    metadata = {**context.request.metadata, "repair_attempt": context.attempt}
    return context.request.model_copy(update={"messages": messages, "metadata": metadata})


class DefaultOutputRepairer:
    """Asks the same client again, showing the last failed output and its issues."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def repair(self, context: RepairContext) -> RepairResult:
        """One repair generation through the client."""
        return RepairResult(response=self._client.generate(repair_request(context)))

    def stream(self, context: RepairContext) -> Iterator[StreamItem]:
        """The repair generation streamed through the client (one chunk when it cannot stream):
        what a streamed run shows while the repair is written."""
        return stream_of(self._client, repair_request(context))

    def astream(self, context: RepairContext) -> AsyncIterator[StreamItem]:
        """The async twin of :meth:`stream`."""
        return astream_of(self._client, repair_request(context))

    async def arepair(self, context: RepairContext) -> RepairResult:
        """The async twin: the client's ``agenerate`` when it has one, else a worker thread."""
        request = repair_request(context)
        if isinstance(self._client, AsyncClient):
            return RepairResult(response=await self._client.agenerate(request))
        import asyncio  # already loaded: this coroutine runs on an event loop

        return RepairResult(response=await asyncio.to_thread(self._client.generate, request))
