"""One Converse call: the request checked and its arguments built once, sent on a boto3 client
(one attempt; async in a worker thread, boto3 having no async client), and the answer read.

The answer's ``output.message.content`` holds text blocks, the forced tool's ``toolUse`` (its
``input`` is the answer of the ``tool`` strategy) and ``reasoningContent`` blocks (their text is
``output.reasoning``; redacted reasoning is counted, never kept). ``stopReason`` maps through
the dated table (an unknown value stays Bedrock's own). ``usage`` gives ``inputTokens``,
``outputTokens`` and the cache's ``cacheReadInputTokens`` / ``cacheWriteInputTokens``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.adapter import SDKCall, forced_tool_finish, key_of
from scriptorium.llm.bedrock.api import PRICES, PROVIDER, STOP_REASONS, base_model
from scriptorium.llm.bedrock.body import Built, build
from scriptorium.llm.bedrock.sdk import Place, Runtime, secrets_of
from scriptorium.llm.deadline import run_bounded
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.llm.pricing import cost_micro
from scriptorium.llm.retry.policy import RetryHooks
from scriptorium.llm.secrets import scrub_response

__all__ = ["Answer", "ConverseCall", "read_answer", "read_usage"]


@dataclass(frozen=True)
class Answer:
    """What one Converse answer says."""

    text: str
    tool_input: str | None
    reasoning: str | None
    finish: str
    usage: Usage
    request_id: str | None


def read_usage(usage: Any) -> Usage:
    """Converse's ``usage`` as token classes: input (cache reads and writes apart), output."""
    found = usage if isinstance(usage, dict) else {}

    def count(name: str) -> int:
        value = found.get(name)
        return value if isinstance(value, int) and value >= 0 else 0

    return Usage(
        input_tokens=count("inputTokens"),
        output_tokens=count("outputTokens"),
        cache_read_input_tokens=count("cacheReadInputTokens"),
        cache_creation_input_tokens=count("cacheWriteInputTokens"),
    )


def _invalid(message: str) -> LLMGenerateError:
    return LLMGenerateError(f"bedrock: {message}", reason="invalid_response", provider=PROVIDER)


def read_answer(result: Any, tool: str | None) -> Answer:
    """The :class:`Answer` of a ``converse`` result (``invalid_response`` when it has no
    message)."""
    if not isinstance(result, dict):
        raise _invalid("the answer is not an object")
    output = result.get("output")
    message = output.get("message") if isinstance(output, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        raise _invalid("the answer has no output message")
    texts: list[str] = []
    thoughts: list[str] = []
    tool_input: str | None = None
    for block in content:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block.get("toolUse"), dict) and tool is not None:
            used = block["toolUse"]
            if tool_input is None:
                tool_input = json.dumps(used.get("input"), ensure_ascii=False)
        elif isinstance(block.get("reasoningContent"), dict):
            reasoning = block["reasoningContent"].get("reasoningText")
            if isinstance(reasoning, dict) and isinstance(reasoning.get("text"), str):
                thoughts.append(reasoning["text"])
    stop = result.get("stopReason")
    finish = STOP_REASONS.get(stop, stop) if isinstance(stop, str) and stop else "stop"
    meta = result.get("ResponseMetadata")
    request_id = meta.get("RequestId") if isinstance(meta, dict) else None
    return Answer(
        text="".join(texts),
        tool_input=tool_input,
        reasoning="".join(thoughts) or None,
        finish=finish,
        usage=read_usage(result.get("usage")),
        request_id=request_id if isinstance(request_id, str) else None,
    )


class ConverseCall(SDKCall[Answer]):
    """One ``converse`` call (see the module)."""

    provider = PROVIDER
    default_base_url = ""

    def __init__(self, request: LLMRequest, options: dict[str, Any]) -> None:
        super().__init__(request, key_of(request))
        if not self.model:
            raise LLMGenerateError(
                "bedrock: the profile names no model (a Bedrock model id or inference profile)",
                reason="config",
                provider=PROVIDER,
            )
        self.built: Built = build(request)
        region = options.get("region")
        profile = options.get("aws_profile")
        self.place = Place(
            endpoint=request.target.endpoint,
            region=region if isinstance(region, str) else None,
            aws_profile=profile if isinstance(profile, str) else None,
            read_timeout_s=request.settings.timeout_s,
        )
        self.slot = self.place
        self.strategy = self.built.strategy

    @property
    def signing(self) -> tuple[str, ...]:
        """Every secret of this call: its key (none, normally) and the secret access key and
        session token its client signs with (known once the client is built)."""
        return tuple(s for s in (*self.secrets, *secrets_of(self.place)) if s)

    def retry_args(self, hooks: RetryHooks) -> dict[str, Any]:
        """The shared retry arguments, with the credentials' secrets to redact."""
        args = super().retry_args(hooks)
        args["secrets"] = self.signing
        return args

    def answer(self, result: Answer, attempts: int, elapsed_s: float) -> LLMResponse:
        """:meth:`response` scrubbed of every secret of the call (the shared rule)."""
        return scrub_response(self.response(result, attempts, elapsed_s), self.signing)

    def send(self, client: Runtime, timeout_s: float) -> Answer:
        """One ``converse`` request, ended by the run's deadline (boto3's sockets cannot see it,
        so the call runs bounded: :func:`~scriptorium.llm.deadline.run_bounded`)."""
        params = self.built.params
        result = run_bounded(lambda: client.client.converse(**params), timeout_s)
        return read_answer(result, self.built.tool)

    async def asend(self, client: Runtime, timeout_s: float) -> Answer:
        """:meth:`send` in a worker thread (boto3 has no async client)."""
        return await asyncio.to_thread(self.send, client, timeout_s)

    def response(self, result: Answer, attempts: int, elapsed_s: float) -> LLMResponse:
        """The ``LLMResponse`` of an answer read."""
        return self.reply(
            result.text,
            result.tool_input,
            result.reasoning,
            result.finish,
            result.usage,
            result.request_id,
            attempts,
            elapsed_s,
        )

    def reply(
        self,
        text: str,
        tool_input: str | None,
        reasoning: str | None,
        finish: str,
        usage: Usage,
        request_id: str | None,
        attempts: int,
        elapsed_s: float,
    ) -> LLMResponse:
        """The ``LLMResponse`` of a whole answer, streamed or not (one place for both)."""
        # Priced by the base model: a cross-region inference profile costs what its model does.
        cost, note = cost_micro(base_model(self.model), usage, self.request.pricing, prices=PRICES)
        priced = usage.model_copy(update={"cost_micro": cost, "llm_calls": attempts})
        metadata: dict[str, Any] = {
            "provider": PROVIDER,
            "strategy": self.strategy,
            "request_id": request_id,
        }
        if note:
            metadata["pricing"] = note
        if self.built.ignored:
            metadata["ignored_settings"] = list(self.built.ignored)
        answered_by_tool = self.strategy == "tool" and tool_input is not None
        return LLMResponse(
            text=tool_input if answered_by_tool and tool_input is not None else text,
            reasoning=reasoning,
            model=self.model,
            finish_reason=forced_tool_finish(finish, answered_by_tool),
            usage=priced,
            attempts=attempts,
            latency_ms=elapsed_s * 1000.0,
            metadata=metadata,
        )
