"""What a row is expected to use before it is sent, and what it used once it returned, in the
units the rate budget counts (pure: computed from the prepared run and the result)."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

from scriptorium.limits.budget import Estimate
from scriptorium.llm.tokens import CHARS_PER_TOKEN
from scriptorium.prompt.model import TextPart

if TYPE_CHECKING:
    from scriptorium.usecase.model import PreparedRun, RunResult

__all__ = ["estimate", "real_usage"]

# Per message framing, as the local token estimate counts it.
_PER_MESSAGE = 4


def estimate(prepared: PreparedRun) -> Estimate:
    """The estimate for a prepared run: its rendered text at four characters a token, and its
    effective ``max_tokens``."""
    chars = len(prepared.system or "")
    for message in prepared.messages:
        content = message.content
        if isinstance(content, str):
            chars += len(content)
        else:
            chars += sum(len(part.text) for part in content if isinstance(part, TextPart))
    schema = prepared.output.schema_
    if schema is not None:
        chars += len(json.dumps(schema, separators=(",", ":")))
    tokens = math.ceil(chars / CHARS_PER_TOKEN) + _PER_MESSAGE * len(prepared.messages)
    return Estimate(input_tokens=tokens, output_tokens=prepared.settings.max_tokens)


def real_usage(result: RunResult) -> Estimate:
    """What a finished run used, counted as providers count it against their input budget
    (uncached input plus cache writes; cache reads are not counted by Anthropic's). Requests
    are its generations (the first and any repairs); transport retries took grants of their
    own."""
    usage = result.usage
    return Estimate(
        input_tokens=usage.input_tokens + usage.cache_creation_input_tokens,
        output_tokens=usage.output_tokens,
        requests=max(1, len(result.attempts)),
    )
