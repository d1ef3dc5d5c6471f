"""The ``fake`` provider: a profile-configured canned responder for offline demos.

A profile with ``provider: fake`` and ``options: {responses: [...]}`` answers each request with the
next string of the list; the last one repeats forever. No network, no key, no cost. (For scripted
exceptions or per-call callables in users' tests, ``scriptorium.testing.FakeClient`` is the tool.)
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.client import Client
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.llm.registry import ProviderConfig, ProviderSpec
from scriptorium.llm.streaming import StreamItem, chunked
from scriptorium.prompt.model import content_text

__all__ = ["PROVIDER", "SPEC", "FakeProviderClient", "estimate_tokens"]

PROVIDER = "fake"


def estimate_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: one token per four characters, rounded up."""
    return (len(text) + 3) // 4


def _prompt_text(request: LLMRequest) -> str:
    parts = [request.system or ""]
    parts.extend(content_text(m.content) for m in request.messages)
    return "\n".join(parts)


class FakeProviderClient:
    """Answers with ``responses`` in turn, the last one repeating. Thread-safe, sync and async.

    Usage is an estimate (:func:`estimate_tokens` of the prompt and the answer) so demos show
    plausible, reproducible numbers; cost is always 0; ``attempts`` is 1, as for one real request.
    """

    def __init__(self, *, responses: Sequence[str], model: str = "fake") -> None:
        if isinstance(responses, str) or not responses:
            raise LLMGenerateError(
                "fake provider: options.responses must be a non-empty list of strings",
                reason="config",
                provider=PROVIDER,
            )
        if not all(isinstance(r, str) for r in responses):
            raise LLMGenerateError(
                "fake provider: every entry of options.responses must be a string",
                reason="config",
                provider=PROVIDER,
            )
        self._responses = tuple(responses)
        self._model = model
        self._turn = 0
        self._lock = threading.Lock()

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> FakeProviderClient:
        """The client a profile's ``options`` describe (``responses``, optional ``model``)."""
        responses = options.get("responses")
        if not isinstance(responses, list | tuple):
            raise LLMGenerateError(
                "fake provider: options.responses must be a non-empty list of strings",
                reason="config",
                provider=PROVIDER,
            )
        model = options.get("model", "fake")
        return cls(responses=responses, model=model if isinstance(model, str) else "fake")

    @property
    def calls(self) -> int:
        """How many responses have been served."""
        with self._lock:
            return self._turn

    def _next(self) -> tuple[int, str]:
        with self._lock:
            turn = self._turn
            self._turn += 1
        return turn, self._responses[min(turn, len(self._responses) - 1)]

    def generate(self, request: LLMRequest) -> LLMResponse:
        """The next canned response for ``request``."""
        turn, text = self._next()
        usage = Usage(
            input_tokens=estimate_tokens(_prompt_text(request)),
            output_tokens=estimate_tokens(text),
            llm_calls=1,
        )
        return LLMResponse(
            text=text,
            model=request.target.model or self._model,
            finish_reason="stop",
            usage=usage,
            attempts=1,
            metadata={"provider": PROVIDER, "turn": turn, "strategy": _strategy(request)},
        )

    async def agenerate(self, request: LLMRequest) -> LLMResponse:
        """The async twin of :meth:`generate` (it never waits)."""
        return self.generate(request)

    def stream(self, request: LLMRequest) -> Iterator[StreamItem]:
        """The next canned response in several chunks, then the response itself."""
        response = self.generate(request)
        yield from chunked(response.text)
        yield response

    async def astream(self, request: LLMRequest) -> AsyncIterator[StreamItem]:
        """The async twin of :meth:`stream`."""
        for item in self.stream(request):
            yield item


def _strategy(request: LLMRequest) -> str | None:
    # The fake follows no strategy; "prompt" is the honest name for "the text is whatever it is".
    return None if request.structured_output is None else "prompt"


def _client(config: ProviderConfig) -> Client:
    return FakeProviderClient.from_options(config.options)


#: The ``fake`` provider's registry entry: one client per profile (its ``options.responses``).
SPEC = ProviderSpec(name=PROVIDER, client=_client)
