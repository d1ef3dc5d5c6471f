"""Counting a request's input tokens with OpenAI's own endpoint: the Responses API's input-token
count (``POST /responses/input_tokens``, the SDK's ``responses.input_tokens.count``).

The count is of the input, which is the same whichever API then generates, so a request bound for
Chat Completions is counted there too (its messages as Responses ``input``). Where the endpoint
cannot count (a compatible server or gateway without the route answers 404, 405, 500 or 501; a 200
that is no count; an SDK too old to have the method; Azure, which does not serve the count) the
answer is
:class:`~scriptorium.llm.model.Uncounted` with the reason, at once and without retries, and the
caller uses the local estimate, saying why. Other failures (a bad key, a rate limit) raise as for a
generation.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import Failure, Uncounted
from scriptorium.llm.openai.api import PROVIDER, RESPONSES_COUNT_PATH
from scriptorium.llm.openai.call import Call
from scriptorium.llm.openai.responses_body import build_responses_params
from scriptorium.llm.openai.sdk import classify
from scriptorium.llm.retry.loop import call_with_retry
from scriptorium.llm.retry.policy import RetryHooks

__all__ = ["CANNOT_COUNT", "COUNTED", "count_input_tokens"]

#: Statuses by which an endpoint says it cannot count tokens (a gateway without the route).
CANNOT_COUNT = frozenset({404, 405, 500, 501})
#: The members of a Responses body the count takes (the rest say how to generate, not what).
COUNTED = ("model", "input", "instructions", "reasoning", "text", "tools", "tool_choice")


def _counting(err: BaseException) -> Failure:
    """The classifier, except that an endpoint saying it cannot count is not asked again."""
    failure = classify(err)
    if failure.http_status in CANNOT_COUNT:
        return dataclasses.replace(failure, retryable=False)
    return failure


def _count_of(result: Any) -> int:
    value = getattr(result, "input_tokens", None)
    if type(value) is not int or value < 0:
        raise LLMGenerateError(
            "openai: the token count is not a count", reason="invalid_response", provider=PROVIDER
        )
    return value


def count_input_tokens(call: Call, client: Any, hooks: RetryHooks) -> int | Uncounted:
    """The input tokens of ``call``'s request on ``client`` (an SDK client), see the module."""
    if call.deployment is not None:
        return Uncounted("openai on azure: the resource has no input-token count (estimated here)")
    counter = getattr(
        getattr(getattr(client, "responses", None), "input_tokens", None), "count", None
    )
    if counter is None:
        return Uncounted(
            "the installed openai SDK has no responses.input_tokens.count (a newer one has)"
        )
    params, _ = build_responses_params(call.request)
    body = {name: params[name] for name in COUNTED if name in params}

    def attempt(timeout_s: float) -> int:
        return _count_of(counter(**body, timeout=timeout_s))

    try:
        count, _, _ = call_with_retry(attempt, _counting, **call.retry_args(hooks))
    except LLMGenerateError as err:
        if err.reason != "invalid_response" and err.http_status not in CANNOT_COUNT:
            raise
        status = f"HTTP {err.http_status}" if err.http_status else err.reason
        return Uncounted(
            f"{call.base_url} has no working token-counting endpoint "
            f"({RESPONSES_COUNT_PATH} answered {status})"
        )
    return count
