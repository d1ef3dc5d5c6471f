"""The ``gemini`` provider: the Gemini API and Vertex AI through Google's ``google-genai`` SDK.

- The SDK is imported on first use (:mod:`.sdk`; missing -> ``reason="provider_unavailable"``),
  its retries off and nothing read from the environment; each request gets the time left of the
  budget as its timeout.
- One SDK client per place (Gemini API base URL, or Vertex AI project and location) and
  credential, reused; async clients per event loop (:class:`~scriptorium.llm._clients.ClientCache`).
- The body is built by :func:`.body.build_body` and sent through the SDK's request layer; the
  answer is read here (:func:`.call.read_answer`), not by the SDK's typed layer.
- ``count_tokens`` asks the API's ``countTokens``; ``verify`` sends the shared minimal request.

Request mapping, structured output, usage and reasoning: ``internal_docs/llm.md``.
"""

from __future__ import annotations

import json
from typing import Any

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.adapter import SDKAdapter
from scriptorium.llm.gemini.api import PROVIDER
from scriptorium.llm.gemini.call import Call
from scriptorium.llm.gemini.sdk import classify, default_factory
from scriptorium.llm.gemini.stream import Source
from scriptorium.llm.model import Failure, LLMRequest, Uncounted
from scriptorium.llm.retry.loop import call_with_retry
from scriptorium.llm.tokens import counting_failure, uncounted

__all__ = ["GeminiClient", "count_body"]


def _counting(err: BaseException) -> Failure:
    """The classifier, except that a counting request is not asked again (see
    :func:`scriptorium.llm.tokens.counting_failure`)."""
    return counting_failure(classify(err))


def count_body(call: Call) -> dict[str, Any]:
    """The ``countTokens`` body for ``call``: the whole ``generateContent`` request (its system
    instruction counts too), wrapped on the Gemini API, as it is on Vertex AI."""
    body = {k: v for k, v in call.body.items() if k != "generationConfig"}
    if call.place.vertexai:
        return body
    return {"generateContentRequest": {"model": call.path, **body}}


def _read_count(content: str | bytes) -> int:
    try:
        value = json.loads(content)
    except ValueError:
        value = None
    total = value.get("totalTokens") if isinstance(value, dict) else None
    if type(total) is not int or total < 0:
        raise LLMGenerateError(
            "gemini: the countTokens answer has no totalTokens",
            reason="invalid_response",
            provider=PROVIDER,
        )
    return total


class GeminiClient(SDKAdapter[Call]):
    """``Client``, ``AsyncClient``, streaming, ``count_tokens`` and ``verify`` for the ``gemini``
    provider (see the module). ``options`` are the profile's (Vertex AI's place, for
    ``verify``); ``hooks`` drive the retry loop; ``sdk_factory(is_async, key, slot)`` builds SDK
    clients (default: the real SDK, retries off)."""

    provider = PROVIDER
    # Thinking models spend output tokens before they answer: room for a word after a thought.
    verify_max_tokens = 16
    call_type = Call
    classify = staticmethod(classify)
    default_factory = staticmethod(default_factory)
    stream_source = Source

    def count_tokens(self, request: LLMRequest) -> int | Uncounted:
        """The input tokens of what :meth:`generate` would send, from the API's ``countTokens``
        Any failure of the route (a gateway without it, a 500, a rate limit, a 200 that is no
        count) is :class:`Uncounted` with the reason, at once and without retries: the caller
        estimates instead; a refused key raises (:func:`scriptorium.llm.tokens.uncounted`)."""
        call = Call(request)
        client = self.clients.sync(call.slot, call.key)
        body = count_body(call)

        def attempt(timeout_s: float) -> int:
            reply = client.api.request(
                "post", f"{call.path}:countTokens", dict(body), call.options(timeout_s)
            )
            return _read_count(reply.body)

        try:
            count, _, _ = call_with_retry(attempt, _counting, **call.retry_args(self.hooks))
        except LLMGenerateError as err:
            return uncounted(err, f"gemini {call.path}:countTokens")
        return count
