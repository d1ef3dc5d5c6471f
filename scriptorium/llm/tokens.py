"""A local estimate of a request's input tokens, for providers without a counting endpoint, and
the rule for when a counting endpoint's failure makes the estimate stand in
(:func:`counting_failure`, :func:`uncounted`).

About four characters of English per token is the usual rule of thumb for current tokenizers;
it is an estimate, and :class:`~scriptorium.llm.model.TokenCount` says so. The text counted is what
the adapters send: system text, every message's text, and the structured-output schema.
"""

from __future__ import annotations

import dataclasses
import json
import math

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.model import Failure, LLMRequest, Uncounted

__all__ = [
    "CHARS_PER_TOKEN",
    "COUNT_RAISES",
    "counting_failure",
    "estimate_input_tokens",
    "uncounted",
]

#: The failures of a counting request that are raised rather than estimated around: a key that
#: is refused or lacks access (a mistake to fix, that the run would hit too), a stop that was
#: asked for, and a client that is not set up.
COUNT_RAISES = frozenset({"auth", "permission", "cancelled", "config", "provider_unavailable"})


def counting_failure(failure: Failure) -> Failure:
    """A counting request's failure as the retry loop should see it: never retried (counting is
    advice; the estimate stands in at once, see :func:`uncounted`)."""
    return dataclasses.replace(failure, retryable=False)


def uncounted(err: LLMGenerateError, where: str) -> Uncounted:
    """Why the estimate stands in for the count ``where`` could not give (any failure of the
    route: a gateway without it, a 500, a rate limit, a body that is no count); ``err`` itself
    is raised again when it is one of :data:`COUNT_RAISES`."""
    if err.reason in COUNT_RAISES:
        raise err
    status = f"HTTP {err.http_status}" if err.http_status else str(err.reason)
    if err.reason == "invalid_response":
        status += " (no count)"
    return Uncounted(f"the token-counting route {where} answered {status}: estimated instead")


CHARS_PER_TOKEN = 4
# Each message costs a few tokens of framing (role markers) in every chat format.
_PER_MESSAGE = 4


def estimate_input_tokens(request: LLMRequest) -> int:
    """Roughly how many input tokens ``request`` is."""
    chars = len(request.system or "")
    for message in request.messages:
        content = message.content
        if isinstance(content, str):
            chars += len(content)
        else:
            chars += sum(len(getattr(part, "text", "") or "") for part in content)
    spec = request.structured_output
    if spec is not None and spec.schema_ is not None:
        chars += len(json.dumps(spec.schema_, separators=(",", ":")))
    return math.ceil(chars / CHARS_PER_TOKEN) + _PER_MESSAGE * len(request.messages)
