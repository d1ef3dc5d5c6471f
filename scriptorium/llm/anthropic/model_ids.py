"""Claude's model ids on the cloud platforms, and the Anthropic model each one stands for.

Amazon Bedrock names a model ``anthropic.claude-sonnet-4-5-20250929-v1:0`` (its own prefix and
version suffix), or through a cross-region inference profile ``us.anthropic.claude-...``,
``eu.``, ``apac.``, ``global.`` and the like, or as the ARN of such a profile; Google Vertex AI
names it ``claude-sonnet-4-5@20250929``. Each is the same model as the Anthropic API's
``claude-sonnet-4-5-20250929``, at the same list price, and takes the same requests, so pricing,
the structured-output strategy ``auto`` picks and the prompt-caching minimums all read the model
through :func:`base_model`, the one mapping.
"""

from __future__ import annotations

import re

__all__ = ["base_model"]

# ``[<inference profile region>.]anthropic.<model>[-v<N>[:<M>]]``, the profile region being the
# few letters Bedrock puts before the provider (us, eu, apac, global, us-gov, jp, au, ...). The
# legacy ``claude-v2`` reads as ``claude``, which prices as nothing: said, never guessed.
_BEDROCK = re.compile(
    r"^(?:[a-z]{2,6}(?:-[a-z]{2,6})?\.)?anthropic\.(?P<model>.+?)(?:-v\d+(?::\d+)?)?$"
)
# ``claude-...@20250929`` (Vertex's dated version) -> ``claude-...-20250929``.
_VERTEX = re.compile(r"^(?P<model>claude-.+)@(?P<date>\d{8})$")


def base_model(model: str) -> str:
    """The Anthropic API's name for ``model``: a Bedrock id, inference profile or ARN without
    its prefixes and version suffix, a Vertex id with its ``@date`` as the API's ``-date``;
    any other name (the API's own) as it is."""
    name = model.rsplit("/", 1)[-1] if model.startswith("arn:") else model
    found = _BEDROCK.match(name)
    if found is not None:
        return found.group("model")
    dated = _VERTEX.match(name)
    if dated is not None:
        return f"{dated.group('model')}-{dated.group('date')}"
    return model
