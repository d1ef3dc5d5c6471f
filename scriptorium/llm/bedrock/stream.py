"""``ConverseStream``: one answer streamed through boto3.

botocore decodes the AWS event stream into events (``messageStart``, ``contentBlockStart``,
``contentBlockDelta``, ``contentBlockStop``, ``messageStop``, ``metadata``; an exception event is
raised as an error). The stream is opened and read to its first content inside one retried
attempt; after that nothing is retried and a failure carries the text handed out so far. The
answer is complete only when both ``messageStop`` (the stop reason) and ``metadata`` (the usage)
came: a stream that ends before is cut off (``reason="connection"`` with ``partial_text``).
Text deltas are handed out as they come; the forced tool's input deltas are the answer's text
under the ``tool`` strategy; reasoning deltas come as ``ReasoningChunk``. A stream cut by
``max_tokens`` ends as a ``length`` answer with what came, priced like the same answer
unstreamed.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.bedrock.api import PROVIDER, STOP_REASONS
from scriptorium.llm.bedrock.call import ConverseCall, read_usage
from scriptorium.llm.bedrock.sdk import Runtime
from scriptorium.llm.client import ReasoningChunk, StreamItem
from scriptorium.llm.deadline import run_bounded
from scriptorium.llm.model import Usage
from scriptorium.llm.retry.http import Classify
from scriptorium.llm.retry.loop import call_with_retry
from scriptorium.llm.retry.policy import RetryHooks
from scriptorium.llm.secrets import scrub_response
from scriptorium.llm.stream_failure import broken_stream
from scriptorium.redaction import redact

__all__ = ["ConverseFold", "drive_converse"]


@dataclass
class ConverseFold:
    """The events of one Converse stream folded into the answer so far."""

    tool_strategy: bool
    text: list[str] = field(default_factory=list)
    tool_input: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    stop: str | None = None
    usage: Usage | None = None

    @property
    def ended(self) -> bool:
        """Both the stop reason and the usage came: the answer is complete."""
        return self.stop is not None and self.usage is not None

    @property
    def partial(self) -> str:
        """The answer's text handed out so far."""
        return "".join(self.tool_input if self.tool_strategy else self.text)

    def add(self, event: Any) -> list[StreamItem]:
        """The pieces ``event`` hands out (text, or reasoning chunks)."""
        if not isinstance(event, dict):
            return []
        delta_event = event.get("contentBlockDelta")
        if isinstance(delta_event, dict):
            return self._delta(delta_event.get("delta"))
        stop = event.get("messageStop")
        if isinstance(stop, dict):
            reason = stop.get("stopReason")
            self.stop = reason if isinstance(reason, str) and reason else "end_turn"
        metadata = event.get("metadata")
        if isinstance(metadata, dict):
            self.usage = read_usage(metadata.get("usage"))
        return []

    def _delta(self, delta: Any) -> list[StreamItem]:
        if not isinstance(delta, dict):
            return []
        text = delta.get("text")
        if isinstance(text, str) and text:
            self.text.append(text)
            return [] if self.tool_strategy else [text]
        used = delta.get("toolUse")
        if isinstance(used, dict) and isinstance(used.get("input"), str):
            piece = used["input"]
            self.tool_input.append(piece)
            return [piece] if self.tool_strategy and piece else []
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, dict) and isinstance(reasoning.get("text"), str):
            self.reasoning.append(reasoning["text"])
            return [ReasoningChunk(reasoning["text"])] if reasoning["text"] else []
        return []

    @property
    def finish(self) -> str:
        """The finish reason (the dated table; an unknown value stays Bedrock's own)."""
        stop = self.stop or "end_turn"
        return STOP_REASONS.get(stop, stop)


@dataclass
class _Opened:
    """A stream read to its first content: the rest of its events, what to hand out first, its
    fold and request id."""

    events: Iterator[Any]
    pending: list[StreamItem]
    fold: ConverseFold
    request_id: str | None
    #: boto3's event stream, closed (with its connection) when the reading ends early.
    body: Any = None

    def close(self) -> None:
        """Close the stream's connection."""
        if self.body is not None:
            self.body.close()


def _open(call: ConverseCall, runtime: Any) -> _Opened:
    fold = ConverseFold(tool_strategy=call.strategy == "tool")
    result = runtime.client.converse_stream(**call.built.params)
    meta = result.get("ResponseMetadata") if isinstance(result, dict) else None
    found = meta.get("RequestId") if isinstance(meta, dict) else None
    request_id = found if isinstance(found, str) else None
    body = result["stream"]
    events = iter(body)
    try:
        for event in events:
            pieces = fold.add(event)
            if pieces or fold.ended:
                return _Opened(events, pieces, fold, request_id, body)
    except BaseException:
        body.close()
        raise
    return _Opened(iter(()), [], fold, request_id, body)


def drive_converse(
    call: ConverseCall, runtime: Runtime, hooks: RetryHooks, classify: Classify
) -> Generator[StreamItem, None, None]:
    """``call`` streamed on ``runtime``: text (and reasoning) chunks as they arrive, then the
    ``LLMResponse`` (the adapter's ``stream_drive``; boto3 has no async client, so its async
    stream runs this one in a worker thread)."""
    started = time.perf_counter()
    args = call.retry_args(hooks)
    opened, attempts, _ = call_with_retry(
        lambda timeout_s: run_bounded(lambda: _open(call, runtime), timeout_s), classify, **args
    )
    fold = opened.fold
    # After the first content, at most timeout_s may pass waiting for the next event.
    gap_s = call.request.settings.timeout_s
    done = object()
    try:
        yield from opened.pending
        while (event := run_bounded(lambda: next(opened.events, done), gap_s)) is not done:
            yield from fold.add(event)
    except GeneratorExit:
        raise
    except Exception as err:
        raise broken_stream(
            err,
            fold.partial,
            provider=PROVIDER,
            model=call.model,
            key=call.key,
            attempts=attempts,
            classify=classify,
            secrets=call.signing,
        ) from err
    finally:
        opened.close()
    if not fold.ended:
        raise LLMGenerateError(
            redact(
                f"bedrock {call.model}: the stream ended before messageStop and metadata (cut off)",
                args["secrets"],
            ),
            reason="connection",
            retryable=True,
            attempts=attempts,
            provider=PROVIDER,
            model=call.model,
            partial_text=fold.partial,
        )
    usage = fold.usage if fold.usage is not None else Usage()
    tool_input = "".join(fold.tool_input) if fold.tool_input else None
    yield scrub_response(
        call.reply(
            "".join(fold.text),
            tool_input,
            "".join(fold.reasoning) or None,
            fold.finish,
            usage,
            opened.request_id,
            attempts,
            time.perf_counter() - started,
        ),
        call.signing,
    )
