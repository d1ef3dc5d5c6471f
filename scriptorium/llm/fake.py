"""The ``fake`` provider: a profile-configured canned responder for offline demos.

A profile with ``provider: fake`` and ``options: {responses: [...]}`` answers each request with the
next string of the list; the last one repeats forever. No network, no key, no cost. (For scripted
exceptions or per-call callables in users' tests, ``scriptorium.testing.FakeClient`` is the tool.)

``options.fail`` scripts failures before the responses, one per call, so a fallback chain can be
shown offline: ``fail: [{reason: overloaded, retry_after_s: 5}]`` makes the first call fail as
a provider that is busy would (after its retries: ``attempts``, default 1, is the HTTP requests it
reports), and later calls answer. A profile with ``fail`` and no ``responses`` fails every call
with its last entry. Entries take ``reason`` (an ``LLMGenerateError`` reason), and optionally
``retry_after_s``, ``attempts``, ``http_status`` and ``message``.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.client import Client
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.llm.registry import ProviderConfig, ProviderSpec
from scriptorium.llm.streaming import StreamItem, chunked
from scriptorium.prompt.model import content_text

__all__ = [
    "PROVIDER",
    "SPEC",
    "FakeProviderClient",
    "ScriptedFailure",
    "check_options",
    "estimate_tokens",
]

PROVIDER = "fake"
# Reasons a provider's retry loop would have retried (and a fallback chain moves on from).
_RETRYABLE = frozenset({"rate_limited", "overloaded", "server_error", "timeout", "connection"})
_FAIL_KEYS = frozenset({"reason", "retry_after_s", "attempts", "http_status", "message"})


@dataclass(frozen=True)
class ScriptedFailure:
    """One call of a fake profile that fails (``options.fail``), as a provider would have."""

    reason: str
    retry_after_s: float | None = None
    attempts: int = 1
    http_status: int | None = None
    message: str | None = None

    def error(self, request: LLMRequest) -> LLMGenerateError:
        """The failure, for ``request``."""
        return LLMGenerateError(
            self.message or f"fake provider: scripted failure ({self.reason})",
            reason=self.reason,
            retryable=self.reason in _RETRYABLE,
            retry_after_s=self.retry_after_s,
            attempts=self.attempts,
            http_status=self.http_status,
            provider=PROVIDER,
            model=request.target.model or None,
        )


def _config(message: str) -> LLMGenerateError:
    return LLMGenerateError(f"fake provider: {message}", reason="config", provider=PROVIDER)


def _failures(entries: object) -> tuple[ScriptedFailure, ...]:
    """``options.fail`` read (``LLMGenerateError(reason="config")`` when it is malformed)."""
    if entries is None:
        return ()
    if not isinstance(entries, list | tuple):
        raise _config("options.fail must be a list of {reason: ...} entries")
    found = []
    for index, entry in enumerate(entries):
        problem = _failure_problem(entry)
        if problem is not None:
            raise _config(f"options.fail[{index}]: {problem}")
        assert isinstance(entry, Mapping)
        found.append(
            ScriptedFailure(
                reason=entry["reason"],
                retry_after_s=entry.get("retry_after_s"),
                attempts=entry.get("attempts", 1),
                http_status=entry.get("http_status"),
                message=entry.get("message"),
            )
        )
    return tuple(found)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _failure_problem(entry: object) -> str | None:
    if not isinstance(entry, Mapping):
        return "must be a mapping with a reason"
    unknown = sorted(str(k) for k in entry if k not in _FAIL_KEYS)
    if unknown:
        return f"unknown key {unknown[0]!r} (expected: {', '.join(sorted(_FAIL_KEYS))})"
    if entry.get("reason") not in LLMGenerateError.REASONS:
        return "reason must be one of: " + ", ".join(sorted(LLMGenerateError.REASONS))
    wait = entry.get("retry_after_s")
    if wait is not None and not (_number(wait) and wait >= 0):
        return "retry_after_s must be a number of seconds"
    attempts = entry.get("attempts", 1)
    if not (isinstance(attempts, int) and not isinstance(attempts, bool) and attempts >= 0):
        return "attempts must be a whole number"
    status = entry.get("http_status")
    if status is not None and not (isinstance(status, int) and not isinstance(status, bool)):
        return "http_status must be a whole number"
    message = entry.get("message")
    if message is not None and not isinstance(message, str):
        return "message must be text"
    return None


def check_options(options: Mapping[str, Any], source: str | None) -> Iterable[str]:
    """What ``check`` says about a fake profile's ``options.fail``."""
    try:
        _failures(options.get("fail"))
    except LLMGenerateError as err:
        yield err.message


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

    def __init__(
        self,
        *,
        responses: Sequence[str],
        model: str = "fake",
        failures: Sequence[ScriptedFailure] = (),
    ) -> None:
        if isinstance(responses, str) or not (responses or failures):
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
        self._failures = tuple(failures)
        self._model = model
        self._turn = 0
        self._lock = threading.Lock()

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> FakeProviderClient:
        """The client a profile's ``options`` describe (``responses``, optional ``fail`` and
        ``model``)."""
        failures = _failures(options.get("fail"))
        responses = options.get("responses", [] if failures else None)
        if not isinstance(responses, list | tuple):
            raise LLMGenerateError(
                "fake provider: options.responses must be a non-empty list of strings",
                reason="config",
                provider=PROVIDER,
            )
        model = options.get("model", "fake")
        return cls(
            responses=responses,
            model=model if isinstance(model, str) else "fake",
            failures=failures,
        )

    @property
    def calls(self) -> int:
        """How many calls have been served (scripted failures included)."""
        with self._lock:
            return self._turn

    def _next(self, request: LLMRequest) -> tuple[int, str]:
        with self._lock:
            turn = self._turn
            self._turn += 1
        failures = self._failures
        if turn < len(failures) or not self._responses:
            raise failures[min(turn, len(failures) - 1)].error(request)
        answer = turn - len(failures)
        return answer, self._responses[min(answer, len(self._responses) - 1)]

    def generate(self, request: LLMRequest) -> LLMResponse:
        """The next canned response for ``request`` (or its scripted failure)."""
        turn, text = self._next(request)
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
SPEC = ProviderSpec(name=PROVIDER, client=_client, check_options=check_options)
