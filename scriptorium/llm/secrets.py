"""Which secrets a request carries, and the one rule that keeps them out of an answer.

A request carries its key (``LLMRequest.api_key``: an API key, or an access token or Entra token
read like one) and, on a route that signs requests itself, the credentials its SDK signs with
(Amazon Bedrock: the AWS secret key and session token). Error messages have been scrubbed of
them for a long time; an *answer* can hold them too, when a provider or a hostile endpoint echoes
the key in a response id, a model name or a request-id header. :func:`scrub_response` removes
every occurrence from everything in an ``LLMResponse`` (its text, model, finish reason and every
string of its metadata), so ``RunResult.model``, ``attempts[].model``, ``metadata``, pickles,
spans, batch records, cassettes and kernel lines never see one.

A stream's text is scrubbed as it is handed out (:class:`StreamScrub`), a secret cut across two
pieces included: the end of a piece that could begin a secret waits for the next piece.

It runs where a provider's answer becomes scriptorium's: the SDK adapters' calls
(:meth:`scriptorium.llm.adapter.SDKCall.answer`, before a recorder or a batch sees the answer)
and the run's LLM boundary (``usecase.boundary``, for every client, custom ones included).

A value shorter than :data:`MIN_SECRET_CHARS` is a placeholder (``EMPTY``, ``none``, ``ollama``:
what local servers document), not a secret, and is left alone everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scriptorium.llm.model import LLMResponse

__all__ = [
    "MIN_SECRET_CHARS",
    "REDACTED",
    "StreamScrub",
    "route_secrets",
    "scrub_response",
    "scrub_text",
    "secret_values",
]

#: The shortest value treated as a secret; shorter ones are placeholders.
MIN_SECRET_CHARS = 8
#: What stands where a secret was.
REDACTED = "[redacted]"


def secret_values(values: Iterable[str | None]) -> tuple[str, ...]:
    """The secrets among ``values``: each of at least :data:`MIN_SECRET_CHARS` characters, once,
    longest first (so a secret holding another is replaced whole)."""
    found = {v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_CHARS}
    return tuple(sorted(found, key=lambda v: (-len(v), v)))


def route_secrets(names: Iterable[str], env: Mapping[str, str]) -> tuple[str, ...]:
    """The values of the variables ``names`` (a route's signing credentials, ``Route.secret_env``)
    in ``env`` that are secrets."""
    return secret_values(env.get(name) for name in names)


def scrub_text(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every occurrence of each of ``secrets`` (from :func:`secret_values`)
    replaced."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def _holds(value: Any, secrets: tuple[str, ...]) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any(secret in item for secret in secrets):
                return True
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
    return False


def _scrubbed(value: Any, secrets: tuple[str, ...]) -> Any:
    # Iterative over nested containers: metadata from a server may nest deeply.
    if isinstance(value, str):
        return scrub_text(value, secrets)
    if not _holds(value, secrets):
        return value
    if isinstance(value, Mapping):
        return {_scrubbed(k, secrets): _scrubbed(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_scrubbed(item, secrets) for item in value)
    if isinstance(value, set | frozenset):
        return type(value)(_scrubbed(item, secrets) for item in value)
    return value


def scrub_response(response: LLMResponse, secrets: Iterable[str | None]) -> LLMResponse:
    """``response`` with every secret among ``secrets`` removed from its text, reasoning, model,
    finish reason and metadata; the same object when it holds none."""
    known = secret_values(secrets)
    if not known:
        return response
    fields = {
        "text": response.text,
        "reasoning": response.reasoning,
        "model": response.model,
        "finish_reason": response.finish_reason,
        "metadata": response.metadata,
    }
    update = {
        name: _scrubbed(value, known) for name, value in fields.items() if _holds(value, known)
    }
    return response.model_copy(update=update) if update else response


class StreamScrub:
    """A stream's text pieces with every secret replaced, also one cut across pieces: the end of a
    piece that could be the beginning of a secret is held back until the pieces after it say
    whether it is one (:meth:`end` gives what is held when the stream is over). Without secrets
    every piece passes as it is. No secret ever stands in the joined pieces handed out, and a
    text holding no part of a secret is handed out as it came."""

    __slots__ = ("_held", "_secrets")

    def __init__(self, secrets: Iterable[str | None]) -> None:
        self._secrets = secret_values(secrets)
        self._held = ""

    def piece(self, text: str) -> str:
        """What of ``text`` (after what was held) can be handed out now, scrubbed."""
        if not self._secrets:
            return text
        window = self._held + text
        cut = self._cut(window)
        self._held = window[cut:]
        return scrub_text(window[:cut], self._secrets)

    def end(self) -> str:
        """What was held back, scrubbed: the stream is over, no secret can complete it."""
        held, self._held = self._held, ""
        return scrub_text(held, self._secrets)

    def _cut(self, window: str) -> int:
        """Where ``window`` can be cut: before its longest end that begins a secret, and never
        inside a whole secret that crosses that point."""
        cut = len(window)
        for secret in self._secrets:
            # The longest end of the window that is a proper beginning of this secret.
            start = max(0, len(window) - len(secret) + 1)
            while True:
                start = window.find(secret[0], start)
                if start < 0 or start >= cut:
                    break
                if secret.startswith(window[start:]):
                    cut = start
                    break
                start += 1
        moved = True
        while moved:  # a whole secret across the cut moves it back to the secret's start
            moved = False
            for secret in self._secrets:
                first = window.find(secret, max(0, cut - len(secret) + 1))
                if 0 <= first < cut < first + len(secret):
                    cut, moved = first, True
        return cut
