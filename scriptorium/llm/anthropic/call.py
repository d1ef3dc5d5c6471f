"""One request's way through the Messages API: the :class:`Call` every path builds (generate,
stream, count_tokens, batch rows), so the checks, the body and the reading of an answer (text,
finish reason, usage, cost, metadata) are written once."""

from __future__ import annotations

import json
import os
from typing import Any

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.adapter import SDKCall, forced_tool_finish, key_of, reply_metadata
from scriptorium.llm.anthropic.api import DEFAULT_BASE_URL, MESSAGES_PATH, PRICES, PROVIDER
from scriptorium.llm.anthropic.body import MessagesBody, build_body
from scriptorium.llm.anthropic.cache import one_hour_writes
from scriptorium.llm.anthropic.model_ids import base_model
from scriptorium.llm.anthropic.platforms import Platform, platform_of, post, route, sending
from scriptorium.llm.anthropic.sdk import apost_messages, post_messages
from scriptorium.llm.media.wire import MediaWire
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.llm.pricing import cost_micro
from scriptorium.llm.secrets import route_secrets

__all__ = [
    "FINISH",
    "REDACTED_KEY",
    "USAGE_FIELDS",
    "Call",
    "Result",
    "reasoning_text",
    "reply_info",
    "thinking_tokens",
]

#: What one successful attempt gives: the parsed 200 body and what its headers said
#: (:func:`reply_info`: the request id, a gateway's cost).
Result = tuple[dict[str, Any], dict[str, Any]]

#: The API's stop reasons as scriptorium's finish reasons: every value it documents (any other
#: passes through as the API names it; the run's judgement makes any ending but ``stop`` invalid).
FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    # The model ran out of context window: as truncated as max_tokens, and treated the same.
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
    "tool_use": "tool_use",
    # A server tool's long turn paused: no complete answer.
    "pause_turn": "pause_turn",
}
#: The token counts a usage object may carry.
USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


#: Where a response's metadata says how many thinking blocks came redacted or without their
#: text (counted, never kept).
REDACTED_KEY = "reasoning_redacted"


def thinking_tokens(usage: Any) -> int:
    """How many of a usage object's output tokens were thinking (its
    ``output_tokens_details.thinking_tokens``; 0 when it does not say), never more than its
    ``output_tokens``: they are counted inside them, and priced there once."""
    details = usage.get("output_tokens_details") if isinstance(usage, dict) else None
    count = details.get("thinking_tokens") if isinstance(details, dict) else None
    if type(count) is not int or count < 0:
        return 0
    output = usage.get("output_tokens") if isinstance(usage, dict) else None
    return min(count, output) if type(output) is int and output >= 0 else count


def reasoning_text(blocks: list[dict[str, Any]]) -> tuple[str | None, int]:
    """The thinking text of a message's content blocks (blocks joined by a blank line; None when
    there is none) and how many thinking blocks came redacted or without their text."""
    texts: list[str] = []
    hidden = 0
    for block in blocks:
        kind = block.get("type")
        if kind == "redacted_thinking":
            hidden += 1
        elif kind == "thinking":
            text = block.get("thinking")
            if isinstance(text, str) and text:
                texts.append(text)
            else:
                hidden += 1
    return ("\n\n".join(texts) if texts else None), hidden


def _usage_ok(usage: Any) -> bool:
    """Usage is an object whose token fields, where present, are non-negative integers."""
    if not isinstance(usage, dict):
        return False
    for field in USAGE_FIELDS:
        value = usage.get(field)
        if value is not None and (type(value) is not int or value < 0):
            return False
    return True


def reply_info(headers: Any) -> dict[str, Any]:
    """What a Messages answer's headers say: its ``request-id`` (or a gateway's), a gateway's
    reported cost (:func:`scriptorium.llm.adapter.reply_metadata`)."""
    return reply_metadata(headers, "request-id")


class Call(SDKCall[Result]):
    """One request's translation to and from the Messages API: the checks, the body (built once,
    media spliced in as it is sent), one attempt, and the answer read back."""

    provider = PROVIDER
    default_base_url = DEFAULT_BASE_URL

    def __init__(self, request: LLMRequest) -> None:
        key = key_of(request)
        model = request.target.model
        #: The cloud platform the request goes through (None: Anthropic's own API).
        self.platform: Platform | None = platform_of(request)
        if not key and self.platform is None:
            raise LLMGenerateError(
                "the anthropic provider needs an API key",
                reason="config",
                provider=PROVIDER,
                model=model,
            )
        if not model:
            raise LLMGenerateError(
                "the anthropic provider needs a model", reason="config", provider=PROVIDER
            )
        super().__init__(request, key)
        if self.platform is not None:
            self.base_url = self.platform.base_url
            self.slot = self.platform
            # What the platform's SDK signs with (Bedrock's AWS secret key and session token)
            # is scrubbed from this call's errors and answers like the key.
            signing = route_secrets(route(request.options).secret_env, os.environ)
            self.secrets = (*self.secrets, *signing)
        self.wire = MediaWire()  # media base64 is spliced in as the body is sent
        self.sent: MessagesBody = build_body(request, encode=self.wire.encode)

    def send(self, client: Any, timeout_s: float) -> Result:
        """One POST of the body; the parsed 200 body and the request id."""
        platform = self.platform
        if platform is not None:
            with sending(platform, self.wire, client, self.sent.body) as body:
                response = post(client, MESSAGES_PATH, body, timeout_s)
            return self.read(response.content), reply_info(response.headers)
        with self.wire.sending(client, self.sent.body) as body:
            content, headers = post_messages(client, body, timeout_s)
        return self.read(content), reply_info(headers)

    async def asend(self, client: Any, timeout_s: float) -> Result:
        """The async twin of :meth:`send`."""
        platform = self.platform
        if platform is not None:
            with sending(platform, self.wire, client, self.sent.body) as body:
                response = await post(client, MESSAGES_PATH, body, timeout_s)
            return self.read(response.content), reply_info(response.headers)
        with self.wire.sending(client, self.sent.body) as body:
            content, headers = await apost_messages(client, body, timeout_s)
        return self.read(content), reply_info(headers)

    def read(self, content: bytes) -> dict[str, Any]:
        """The parsed 200 body; anything unusable raises ``invalid_response`` (not retried)."""
        try:
            body = json.loads(content)
        except (ValueError, UnicodeDecodeError) as err:
            raise self._invalid("the 200 response is not JSON") from err
        if not isinstance(body, dict) or not isinstance(body.get("content"), list):
            raise self._invalid("the 200 response has no content list")
        if not all(isinstance(block, dict) for block in body["content"]):
            raise self._invalid("the 200 response has a malformed content block")
        usage = body.get("usage")
        if usage is not None and not _usage_ok(usage):
            raise self._invalid("the 200 response has malformed usage")
        return body

    def read_count(self, content: bytes) -> int:
        """``input_tokens`` of a token-counting answer; ``invalid_response`` when it has none."""
        try:
            body = json.loads(content)
        except (ValueError, UnicodeDecodeError) as err:
            raise self._invalid("the count_tokens response is not JSON") from err
        count = body.get("input_tokens") if isinstance(body, dict) else None
        if type(count) is not int or count < 0:
            raise self._invalid("the count_tokens response has no input_tokens count")
        return count

    def _invalid(self, what: str) -> LLMGenerateError:
        return LLMGenerateError(
            what, reason="invalid_response", retryable=False, http_status=200, provider=PROVIDER
        )

    def response(self, result: Result, attempts: int, elapsed_s: float) -> LLMResponse:
        """The ``LLMResponse`` of a Messages body (from a reply, a folded stream or a batch row)
        and what its headers said (:func:`reply_info`)."""
        body, reply = result
        metadata: dict[str, Any] = {"request_id": None, **reply}
        if isinstance(body.get("id"), str):
            metadata["response_id"] = body["id"]
        output = self.sent.output
        if output is not None:
            metadata["strategy"] = output.strategy
            if output.dropped:
                metadata["schema_dropped"] = list(output.dropped)
        if self.sent.ignored:
            metadata["ignored_settings"] = list(self.sent.ignored)
        text, tool_called = self._text(body["content"])
        stop_reason = body.get("stop_reason")
        finish = FINISH.get(stop_reason, stop_reason) if isinstance(stop_reason, str) else "unknown"
        finish = forced_tool_finish(finish, tool_called)
        if finish != stop_reason:
            metadata["provider_finish_reason"] = stop_reason
        raw_usage = body.get("usage")
        tier = raw_usage.get("service_tier") if isinstance(raw_usage, dict) else None
        if isinstance(tier, str):
            metadata["service_tier"] = tier
        if raw_usage is None:
            # Decided: a 200 without usage keeps its text; the zero count is said, not hidden.
            metadata["usage_missing"] = True
            raw_usage = {}
        usage = Usage(
            **{f: raw_usage.get(f) or 0 for f in USAGE_FIELDS},
            cache_write_1h_input_tokens=one_hour_writes(raw_usage),
            llm_calls=attempts,
            reasoning_tokens=thinking_tokens(raw_usage),
        )
        reasoning, hidden = reasoning_text(body["content"])
        if hidden:
            metadata[REDACTED_KEY] = hidden
        reported = body.get("model")
        model = reported if isinstance(reported, str) and reported else self.model
        usage = usage.model_copy(update={"cost_micro": self._cost(usage, model, metadata)})
        return LLMResponse(
            text=text,
            reasoning=reasoning,
            model=model,
            finish_reason=finish,
            usage=usage,
            attempts=attempts,
            latency_ms=round(elapsed_s * 1000.0, 3),
            metadata=metadata,
        )

    def _cost(self, usage: Usage, reported_model: str, metadata: dict[str, Any]) -> int:
        """Priced by the profile's model name (what its ``pricing`` refers to; a platform's id
        as the Anthropic model it stands for, or ``options.base_model``), else by the name the
        API reported (an alias may resolve to a listed snapshot)."""
        priced = self.priced_as()
        cost, note = cost_micro(priced, usage, self.request.pricing, prices=PRICES)
        if note and reported_model not in (self.model, priced):
            cost, note = cost_micro(base_model(reported_model), usage, None, prices=PRICES)
        if note:
            metadata["pricing"] = note
        return cost

    def priced_as(self) -> str:
        """The model name prices are looked up by: ``options.base_model`` on a platform when the
        profile gives one (an application inference profile's ARN names no model), else the
        Anthropic model the id stands for (:func:`base_model`)."""
        given = self.request.options.get("base_model") if self.platform is not None else None
        return given if isinstance(given, str) and given else base_model(self.model)

    def _text(self, blocks: list[dict[str, Any]]) -> tuple[str, bool]:
        output = self.sent.output
        if output is not None and output.tool is not None:
            for block in blocks:
                if block.get("type") == "tool_use" and block.get("name") == output.tool:
                    partial = block.get("partial")
                    if isinstance(partial, str):  # a streamed input cut short (stream.Fold)
                        return partial, True
                    value = block.get("input")
                    if output.wrapped and isinstance(value, dict):
                        value = value.get("value")
                    return json.dumps(value, ensure_ascii=False), True
        parts = [b.get("text") for b in blocks if b.get("type") == "text"]
        if not all(isinstance(part, str) for part in parts):
            raise self._invalid("the 200 response has a text block without text")
        return "".join(parts), False  # type: ignore[arg-type]  # all str, checked above
