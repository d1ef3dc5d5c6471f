"""One request's way through Chat Completions: the :class:`Call` every path builds (generate,
stream, batch rows), and :func:`read_completion`, the one reader of a completion body (text,
finish reason, usage, metadata, reasoning text) for a reply, a folded stream and a batch row
alike (:func:`parse_completion` is its reading without the reasoning text)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scriptorium.errors import LLMGenerateError, describe
from scriptorium.llm.adapter import SDKCall, forced_tool_finish, key_of, reply_metadata
from scriptorium.llm.media.wire import MediaWire
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.llm.openai.api import CHAT_PATH, DEFAULT_BASE_URL, PRICES, PROVIDER
from scriptorium.llm.openai.azure import Deployment, deployment_of, is_azure, priced_as
from scriptorium.llm.openai.body import build_params, ignored_settings, request_reasoning
from scriptorium.llm.openai.sdk import auth_headers, http_response_class
from scriptorium.llm.pricing import cost_micro
from scriptorium.llm.sdk_http import encode_body

__all__ = [
    "CHAT_USAGE",
    "FINISH",
    "REASONING_FIELDS",
    "RESPONSES_USAGE",
    "Call",
    "Completion",
    "Result",
    "answer_usage",
    "azure_cost",
    "parse_completion",
    "read_completion",
    "token_usage",
]

#: The API's finish reasons as scriptorium's: every value it documents (any other passes through
#: as named; the run's judgement makes any ending but ``stop`` invalid).
FINISH = {
    "stop": "stop",
    "length": "length",
    "content_filter": "refusal",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
}

#: A completion read: text, finish reason, usage (tokens only) and metadata.
Completion = tuple[str, str, Usage, dict[str, Any]]
#: What one successful attempt gives: the completion read, what its headers said (the request
#: id, a gateway's cost: :func:`scriptorium.llm.adapter.reply_metadata`) and its reasoning text.
Result = tuple[Completion, dict[str, Any], str | None]

#: The message (and delta) members OpenAI-compatible servers return reasoning text in:
#: ``reasoning_content`` (vLLM, DeepSeek, llama.cpp) and ``reasoning`` (Ollama, OpenRouter).
#: OpenAI's own Chat Completions returns none (only the count of reasoning tokens).
REASONING_FIELDS = ("reasoning_content", "reasoning")


def _invalid(message: str) -> LLMGenerateError:
    return LLMGenerateError(message, reason="invalid_response", provider=PROVIDER)


def _count(holder: Any, key: str) -> int:
    """A token count: missing or null is 0; anything but a non-negative integer is a broken
    response (counting it as 0 would under-report what was paid for)."""
    value = holder.get(key) if isinstance(holder, Mapping) else None
    if value is None:
        return 0
    if type(value) is not int or value < 0:
        raise _invalid(f"openai: usage.{key} is not a non-negative integer")
    return value


#: Where a usage object keeps its counts: input, its details, output, its details.
UsageNames = tuple[str, str, str, str]
CHAT_USAGE: UsageNames = (
    "prompt_tokens",
    "prompt_tokens_details",
    "completion_tokens",
    "completion_tokens_details",
)
RESPONSES_USAGE: UsageNames = (
    "input_tokens",
    "input_tokens_details",
    "output_tokens",
    "output_tokens_details",
)


def answer_usage(body: Mapping[str, Any], fields: UsageNames, metadata: dict[str, Any]) -> Usage:
    """The usage of an answer's body read by ``fields`` (:func:`token_usage`), with what both
    APIs' answers say beside it put in ``metadata``: no usage at all, the model that answered and
    the service tier."""
    usage_body = body.get("usage")
    if not isinstance(usage_body, dict):
        metadata["usage_missing"] = True
        usage_body = {}
    if isinstance(body.get("model"), str):
        metadata["response_model"] = body["model"]
    if isinstance(body.get("service_tier"), str):
        metadata["service_tier"] = body["service_tier"]
    return token_usage(usage_body, fields)


def token_usage(usage_body: Mapping[str, Any], names: UsageNames) -> Usage:
    """The token classes of a usage object, for both APIs (``names`` says where each count is).

    ``input_tokens`` is the input count minus the cached tokens, which are reported as
    ``cache_read_input_tokens``: OpenAI counts cached tokens inside the input, and pricing
    charges each class once. ``reasoning_tokens`` comes from the output details' count, counted
    inside the output (so inside ``output_tokens``, priced there once)."""
    inputs, input_details, outputs, output_details = names
    prompt = _count(usage_body, inputs)
    details = usage_body.get(input_details)
    cached = min(prompt, _count(details, "cached_tokens") if isinstance(details, dict) else 0)
    completion = _count(usage_body, outputs)
    more = usage_body.get(output_details)
    reasoned = _count(more, "reasoning_tokens") if isinstance(more, dict) else 0
    return Usage(
        input_tokens=prompt - cached,
        output_tokens=completion,
        cache_read_input_tokens=cached,
        reasoning_tokens=min(reasoned, completion),
    )


def parse_completion(raw: bytes, strategy: str | None) -> Completion:
    """Text, finish reason, usage (tokens only) and metadata from a 200 body (see
    :func:`read_completion`, which also gives the reasoning text)."""
    return read_completion(raw, strategy)[0]


def _reasoning(message: dict[str, Any]) -> str | None:
    """The reasoning text a compatible server put in the message (None: none)."""
    for name in REASONING_FIELDS:
        value = message.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def read_completion(raw: bytes, strategy: str | None) -> tuple[Completion, str | None]:
    """Text, finish reason, usage (tokens only) and metadata from a 200 body, and the reasoning
    text it carries (None: none); ``invalid_response`` when the body is not a chat completion.

    Usage: :func:`token_usage` of ``prompt_tokens``, ``prompt_tokens_details.cached_tokens``,
    ``completion_tokens`` and ``completion_tokens_details.reasoning_tokens``.
    """
    try:
        body = json.loads(raw)
    except ValueError as err:
        raise _invalid(f"openai: the 200 response is not JSON ({describe(err)})") from err
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _invalid("openai: the 200 response has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise _invalid("openai: the 200 response's choice has no message")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise _invalid("openai: the message content is not text")
    text = content or ""
    metadata: dict[str, Any] = {}
    if isinstance(body.get("id"), str):
        metadata["response_id"] = body["id"]
    raw_finish = choices[0].get("finish_reason")
    finish = FINISH.get(raw_finish, raw_finish) if isinstance(raw_finish, str) else "stop"
    calls = message.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise _invalid("openai: the message's tool_calls is not a list")
    if strategy == "tool" and isinstance(calls, list) and calls:
        function = calls[0].get("function") if isinstance(calls[0], dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if not isinstance(arguments, str):
            raise _invalid("openai: the tool call has no arguments")
        text = arguments
        finish = forced_tool_finish(finish, True)
    if raw_finish != finish:
        metadata["provider_finish_reason"] = raw_finish
    refusal = message.get("refusal")
    if refusal is not None and not isinstance(refusal, str):
        raise _invalid("openai: the message's refusal is not text")
    if refusal:
        finish = "refusal"
        metadata["refusal"] = refusal
        text = text or refusal
    usage = answer_usage(body, CHAT_USAGE, metadata)
    return (text, finish, usage, metadata), _reasoning(message)


def azure_cost(
    request: LLMRequest, usage: Usage, reported: Any, *, batch: bool = False
) -> tuple[int, str | None]:
    """An Azure answer's cost and note (see :func:`scriptorium.llm.openai.azure.priced_as`); a
    profile's ``pricing`` prices it whatever the model."""
    model = priced_as(request, reported if isinstance(reported, str) else None)
    if model is None and not request.pricing:
        deployment = request.target.model
        return 0, (
            f"azure deployment {deployment!r}: the answer named no model and the profile gives "
            "no options.base_model: cost 0"
        )
    name = model or request.target.model
    return cost_micro(name, usage, request.pricing, batch=batch, prices=PRICES)


class Call(SDKCall[Result]):
    """One request's translation to and from Chat Completions: the key check, the parameters
    (built once, media spliced in as they are sent), one attempt, and the answer read back."""

    provider = PROVIDER
    default_base_url = DEFAULT_BASE_URL
    #: Which API the call speaks, and where its body is posted under the base URL.
    api = "chat"
    path = CHAT_PATH

    def __init__(self, request: LLMRequest) -> None:
        key = key_of(request)
        if not key and is_azure(request.options):
            raise LLMGenerateError(
                "openai on azure: no API key or Entra token",
                reason="config",
                provider=PROVIDER,
                model=request.target.model,
            )
        # No key (a local server's profile naming none): sent without Authorization.
        super().__init__(request, key)
        #: The Azure deployment the request goes to (None: OpenAI's API or a compatible server).
        self.deployment: Deployment | None = deployment_of(request)
        if self.deployment is not None:
            self.base_url = self.deployment.endpoint
            self.slot = self.deployment
        self.wire = MediaWire()  # media base64 is spliced in as the body is sent
        self.params, self.strategy = self.build(request)

    def build(self, request: LLMRequest) -> tuple[dict[str, Any], str | None]:
        """The body and the structured strategy used (media spliced in as it is sent)."""
        return build_params(request, media_wire=self.wire)

    def parse(self, raw: bytes) -> tuple[Completion, str | None]:
        """A 200 body read: the completion and its reasoning text."""
        return read_completion(raw, self.strategy)

    def ignored(self) -> tuple[str, ...]:
        """The request's settings this API does not take (said in metadata)."""
        request = self.request
        return ignored_settings(request.settings, request_reasoning(request))

    def options(self, timeout_s: float) -> dict[str, Any]:
        """The SDK request options of one attempt: its timeout, and no ``Authorization`` when
        the call has no key."""
        headers = auth_headers(self.key)
        return (
            {"timeout": timeout_s}
            if headers is None
            else {"timeout": timeout_s, "headers": headers}
        )

    def send(self, client: Any, timeout_s: float) -> Result:
        """One POST of the parameters; the completion read and the request id."""
        with self.wire.sending(client, self.params) as sent:
            response = client.post(
                self.path,
                content=encode_body(sent),
                cast_to=http_response_class(),
                options=self.options(timeout_s),
            )
        return self.read(response)

    async def asend(self, client: Any, timeout_s: float) -> Result:
        """The async twin of :meth:`send`."""
        with self.wire.sending(client, self.params) as sent:
            response = await client.post(
                self.path,
                content=encode_body(sent),
                cast_to=http_response_class(),
                options=self.options(timeout_s),
            )
        return self.read(response)

    def read(self, raw: Any) -> Result:
        """An HTTP response (``content`` and ``headers``) read. Parsed inside the attempt, so an
        invalid 200 fails through the retry loop like any failure and carries its attempt count."""
        completion, reasoning = self.parse(raw.content)
        return completion, reply_metadata(raw.headers, "x-request-id"), reasoning

    def cost(self, usage: Usage, reported: Any, *, batch: bool = False) -> tuple[int, str | None]:
        """What ``usage`` costs and the pricing note: by the profile's model name (what its
        ``pricing`` names); on Azure, where the model is a deployment's name, by the model the
        answer reports, else ``options.base_model``, else 0 saying why."""
        request = self.request
        if self.deployment is None:
            return cost_micro(
                request.target.model, usage, request.pricing, batch=batch, prices=PRICES
            )
        return azure_cost(request, usage, reported, batch=batch)

    def response(self, result: Result, attempts: int, elapsed_s: float) -> LLMResponse:
        """The ``LLMResponse`` of a completion read and what its headers said."""
        (text, finish, usage, metadata), reply, reasoning = result
        request_id = reply.get("request_id")
        request = self.request
        cost, note = self.cost(usage, metadata.get("response_model"))
        usage = usage.model_copy(update={"cost_micro": cost, "llm_calls": attempts})
        metadata.update({"provider": PROVIDER, "strategy": self.strategy})
        if self.api != "chat":  # Chat Completions is the default, said only when it is not
            metadata["api"] = self.api
        if request_id:
            metadata.update(reply)
        elif "gateway_cost" in reply:
            metadata["gateway_cost"] = reply["gateway_cost"]
        if note:
            metadata["pricing"] = note
        ignored = self.ignored()
        if ignored:
            metadata["ignored_settings"] = list(ignored)
        return LLMResponse(
            text=text,
            reasoning=reasoning,
            model=metadata.get("response_model") or request.target.model,
            finish_reason=finish,
            usage=usage,
            attempts=attempts,
            # Wall time, not the retry clock: that one is injectable and may be a fake.
            latency_ms=elapsed_s * 1000.0,
            metadata=metadata,
        )
