"""A local estimate of a request's input tokens, for providers without a counting endpoint.

About four characters of English per token is the usual rule of thumb for current tokenizers;
it is an estimate, and :class:`~scriptorium.llm.model.TokenCount` says so. The text counted is what
the adapters send: system text, every message's text, and the structured-output schema.
"""

from __future__ import annotations

import json
import math

from scriptorium.llm.model import LLMRequest

__all__ = ["CHARS_PER_TOKEN", "estimate_input_tokens"]

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
