"""One request's way through ``generateContent``: the :class:`Call` every path builds (generate,
stream, count tokens, batch rows), and :func:`read_answer`, the one reader of a
``GenerateContentResponse`` body (text, reasoning, finish reason, usage, metadata) for a reply,
a folded stream and a batch row alike."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scriptorium.errors import LLMGenerateError, describe
from scriptorium.llm.adapter import SDKCall, key_of, reply_metadata
from scriptorium.llm.gemini.api import (
    PRICES,
    PROVIDER,
    Place,
    place_of,
    price_of,
    route,
)
from scriptorium.llm.gemini.body import build_body, ignored_settings
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.llm.pricing import cost_micro
from scriptorium.llm.streaming import ErrorEvent
from scriptorium.profile.model import variable_name_problem

__all__ = [
    "FINISH",
    "REQUEST_ID_HEADER",
    "Answer",
    "Call",
    "call_args",
    "model_path",
    "price_usage",
    "read_answer",
    "read_usage",
]

#: Gemini's finish reasons as scriptorium's: every value the API documents. A normal end is
#: ``stop``, the token limit ``length``, and every ending that blocked content (safety, recitation,
#: blocklists, prohibited content, personal data, images, Model Armor) ``refusal``; the other
#: endings are kept as Gemini names them (the run's judgement makes any ending but ``stop``
#: invalid), as is a value this table does not know.
FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "refusal",
    "RECITATION": "refusal",
    "BLOCKLIST": "refusal",
    "PROHIBITED_CONTENT": "refusal",
    "SPII": "refusal",
    "IMAGE_SAFETY": "refusal",
    "IMAGE_PROHIBITED_CONTENT": "refusal",
    "IMAGE_RECITATION": "refusal",
    "MODEL_ARMOR": "refusal",
    "JAILBREAK": "refusal",
    "FINISH_REASON_UNSPECIFIED": "FINISH_REASON_UNSPECIFIED",
    "LANGUAGE": "LANGUAGE",
    "OTHER": "OTHER",
    "MALFORMED_FUNCTION_CALL": "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL": "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS": "TOO_MANY_TOOL_CALLS",
    "MISSING_THOUGHT_SIGNATURE": "MISSING_THOUGHT_SIGNATURE",
    "MALFORMED_RESPONSE": "MALFORMED_RESPONSE",
    "IMAGE_OTHER": "IMAGE_OTHER",
    "NO_IMAGE": "NO_IMAGE",
}


#: The header Google's front ends put a request's id in (a gateway's own is read otherwise).
REQUEST_ID_HEADER = "x-goog-request-id"


@dataclass(frozen=True)
class Answer:
    """A ``GenerateContentResponse`` read: the answer text, the thought summaries (None: none),
    the finish reason, usage (tokens only), metadata, and the prompt's size in tokens (cached ones
    included), which decides the price tier."""

    text: str
    reasoning: str | None
    finish: str
    usage: Usage
    metadata: dict[str, Any]
    prompt_tokens: int
    #: The arguments of the first function call, as JSON text (None: no call).
    tool_args: str | None = None


def _invalid(message: str) -> LLMGenerateError:
    return LLMGenerateError(message, reason="invalid_response", http_status=200, provider=PROVIDER)


def _count(holder: Mapping[str, Any], key: str) -> int:
    """A token count: missing or null is 0; anything but a non-negative integer is a broken
    answer (counting it as 0 would under-report what was paid for)."""
    value = holder.get(key)
    if value is None:
        return 0
    if type(value) is not int or value < 0:
        raise _invalid(f"gemini: usageMetadata.{key} is not a non-negative integer")
    return value


def read_usage(meta: Any) -> tuple[Usage, int]:
    """Usage from ``usageMetadata``, and the prompt's size. ``promptTokenCount`` includes the
    implicitly cached tokens (``cachedContentTokenCount``), which are reported apart as cache
    reads; ``thoughtsTokenCount`` is reported apart from ``candidatesTokenCount`` by Gemini and
    added to the output here (so it is priced once, at the output rate), and said as
    ``reasoning_tokens``; a tool-use prompt's tokens count as input."""
    meta = meta if isinstance(meta, dict) else {}
    prompt = _count(meta, "promptTokenCount") + _count(meta, "toolUsePromptTokenCount")
    cached = min(prompt, _count(meta, "cachedContentTokenCount"))
    thoughts = _count(meta, "thoughtsTokenCount")
    usage = Usage(
        input_tokens=prompt - cached,
        output_tokens=_count(meta, "candidatesTokenCount") + thoughts,
        cache_read_input_tokens=cached,
        reasoning_tokens=thoughts,
    )
    return usage, prompt


def call_args(part: Mapping[str, Any]) -> str | None:
    """A ``functionCall`` part's arguments as JSON text (None: the part is no call)."""
    called = part.get("functionCall")
    if not isinstance(called, dict):
        return None
    args = called.get("args")
    return json.dumps(args if args is not None else {}, ensure_ascii=False)


def _parts(candidate: Mapping[str, Any]) -> tuple[str, str | None, str | None]:
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    if parts is None:
        return "", None, None
    if not isinstance(parts, list):
        raise _invalid("gemini: the candidate's content.parts is not a list")
    text: list[str] = []
    thoughts: list[str] = []
    args: str | None = None
    for part in parts:
        if isinstance(part, dict) and args is None:
            args = call_args(part)
        piece = part.get("text") if isinstance(part, dict) else None
        if piece is None:
            continue  # a function call, a thought signature, inline data: no text
        if not isinstance(piece, str):
            raise _invalid("gemini: a part's text is not text")
        (thoughts if part.get("thought") is True else text).append(piece)
    return "".join(text), ("".join(thoughts) or None), args


def read_answer(body: Any) -> Answer:
    """A ``GenerateContentResponse`` (parsed JSON, or its bytes) read; ``invalid_response`` when
    it is not one. A prompt blocked before any candidate (``promptFeedback.blockReason``) is a
    refusal with no text; an ``error`` object is the server's failure (:class:`ErrorEvent`)."""
    if isinstance(body, bytes | str):
        try:
            body = json.loads(body)
        except ValueError as err:
            raise _invalid(f"gemini: the 200 response is not JSON ({describe(err)})") from err
    if not isinstance(body, dict):
        raise _invalid("gemini: the 200 response is not a JSON object")
    if "error" in body:
        raise ErrorEvent(body)
    metadata: dict[str, Any] = {}
    if isinstance(body.get("responseId"), str):
        metadata["response_id"] = body["responseId"]
    if isinstance(body.get("modelVersion"), str):
        metadata["response_model"] = body["modelVersion"]
    if not isinstance(body.get("usageMetadata"), dict):
        metadata["usage_missing"] = True
    usage, prompt = read_usage(body.get("usageMetadata"))
    candidates = body.get("candidates")
    if not candidates:
        feedback = body.get("promptFeedback")
        blocked = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if not isinstance(blocked, str):
            raise _invalid("gemini: the 200 response has no candidates")
        metadata.update(provider_finish_reason=blocked, block_reason=blocked)
        return Answer("", None, "refusal", usage, metadata, prompt)
    if not isinstance(candidates, list) or not isinstance(candidates[0], dict):
        raise _invalid("gemini: the 200 response's candidates are not a list of objects")
    candidate = candidates[0]
    text, reasoning, args = _parts(candidate)
    raw = candidate.get("finishReason")
    finish = FINISH.get(raw, raw) if isinstance(raw, str) else "stop"
    if isinstance(raw, str) and raw.lower() != finish:
        metadata["provider_finish_reason"] = raw
    return Answer(text, reasoning, finish, usage, metadata, prompt, args)


def price_usage(
    model: str,
    usage: Usage,
    prompt_tokens: int,
    override: Mapping[str, float | None] | None,
    *,
    batch: bool = False,
) -> tuple[int, str | None, bool]:
    """The cost of one call in micro-USD, a note when there is no price, and whether the
    long-context price applied: the adapter chooses the entry (by the prompt's size) and the
    shared pricing prices it."""
    found = price_of(model, prompt_tokens)
    if found is None:
        cost, note = cost_micro(model, usage, override, batch=batch, prices={})
        return cost, note, False
    name, price = found
    cost, note = cost_micro(name, usage, override, batch=batch, prices={name: price})
    return cost, note, price is not PRICES[name]


def model_path(model: str, vertexai: bool) -> str:
    """The resource path of ``model`` under the API version (the SDK adds Vertex AI's project
    and location): ``models/M`` on the Gemini API, ``publishers/google/models/M`` on Vertex AI;
    a name already given as a path is kept."""
    name = model.strip()
    if vertexai:
        if name.startswith(("projects/", "publishers/")):
            return name
        return f"publishers/google/models/{name.removeprefix('models/')}"
    return name if name.startswith(("models/", "tunedModels/")) else f"models/{name}"


def _credential_missing(request: LLMRequest, place: Place, key: str) -> str | None:
    """Why ``request`` cannot be sent as it is: no key for the Gemini API; on Vertex AI no
    project, a key variable (Vertex AI takes no API key), or a token variable named with no
    token. A run never gets here so (prepare reads the key or the token, and refuses first); a
    request built by hand gets a clear error instead of an anonymous call."""
    if not place.vertexai:
        return None if key else "no API key (name its variable in the profile's api_key_env)"
    if place.project is None:
        return "options.vertexai needs options.project"
    refused = route(request.options).no_key_env
    if refused is not None and request.target.api_key_env:
        return refused
    token_env = request.options.get("access_token_env")
    if isinstance(token_env, str) and token_env.strip() and not key:
        named = "a token variable" if variable_name_problem("", token_env) else token_env.strip()
        return (
            f"options.access_token_env names {named}, but the request carries "
            "no access token (a run reads that variable like a key; a request built by hand "
            "passes the token as its api_key)"
        )
    return None


def _timeout_ms(timeout_s: float) -> int:
    return max(1, math.ceil(timeout_s * 1000))


class Call(SDKCall[Answer]):
    """One request's translation to and from ``generateContent``: the credential and model
    checks, the body (built once), one attempt, and the answer read back."""

    provider = PROVIDER
    default_base_url = ""

    def __init__(self, request: LLMRequest) -> None:
        model = request.target.model
        if not model.strip():
            raise LLMGenerateError(
                "gemini: the profile names no model", reason="config", provider=PROVIDER
            )
        place: Place = place_of(request.target.endpoint, request.options)
        key = key_of(request)
        problem = _credential_missing(request, place, key)
        if problem is not None:
            raise LLMGenerateError(
                f"gemini: {problem}", reason="config", provider=PROVIDER, model=model
            )
        super().__init__(request, key)
        self.place = place
        #: The SDK client cache's slot for this call's place (with the key: its credential).
        self.slot = place.slot()
        self.built = build_body(request)
        self.body = self.built.body
        self.strategy = self.built.strategy
        self.path = model_path(model, place.vertexai)

    def options(self, timeout_s: float) -> dict[str, Any]:
        """The per-request HTTP options: the time left of the budget."""
        return {"timeout": _timeout_ms(timeout_s)}

    def send(self, client: Any, timeout_s: float) -> Answer:
        """One POST of the body; the answer read."""
        reply = client.api.request(
            "post", f"{self.path}:generateContent", dict(self.body), self.options(timeout_s)
        )
        return self.read(reply.body, reply.headers)

    async def asend(self, client: Any, timeout_s: float) -> Answer:
        """The async twin of :meth:`send`."""
        reply = await client.api.async_request(
            "post", f"{self.path}:generateContent", dict(self.body), self.options(timeout_s)
        )
        return self.read(reply.body, reply.headers)

    def read(self, content: Any, headers: Any) -> Answer:
        """A 200's body (bytes, text or parsed JSON) read, inside the attempt, so an invalid one
        fails through the retry loop like any failure; a gateway's request id or cost from the
        headers goes in the metadata, as for every adapter."""
        answer = read_answer(content)
        reply = reply_metadata(headers, REQUEST_ID_HEADER)
        if reply.get("request_id"):
            answer.metadata.update(reply)
        elif "gateway_cost" in reply:
            answer.metadata["gateway_cost"] = reply["gateway_cost"]
        return answer

    def response(self, result: Answer, attempts: int, elapsed_s: float) -> LLMResponse:
        """The ``LLMResponse`` of an answer read."""
        request = self.request
        cost, note, long_context = price_usage(
            self.model, result.usage, result.prompt_tokens, request.pricing
        )
        usage = result.usage.model_copy(update={"cost_micro": cost, "llm_calls": attempts})
        metadata = dict(result.metadata)
        metadata.update({"provider": PROVIDER, "strategy": self.strategy})
        if self.place.vertexai:
            metadata["platform"] = "vertexai"
        if self.built.dropped:
            metadata["schema_dropped"] = list(self.built.dropped)
        if note:
            metadata["pricing"] = note
        if long_context:
            metadata["price_tier"] = "long_context"
        ignored = ignored_settings(request.settings, self.built.plan)
        if ignored:
            metadata["ignored_settings"] = list(ignored)
        text = result.text
        if self.strategy == "tool" and result.tool_args is not None:
            text = result.tool_args
        return LLMResponse(
            text=text,
            reasoning=result.reasoning,
            model=metadata.get("response_model") or self.model,
            finish_reason=result.finish,
            usage=usage,
            attempts=attempts,
            latency_ms=elapsed_s * 1000.0,
            metadata=metadata,
        )
