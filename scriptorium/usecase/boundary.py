"""The LLM boundary of a run: whatever a client or repairer raises or returns is checked and
translated here, in one place, for both the sync and the async driver."""

from __future__ import annotations

from typing import Any, Self

from scriptorium.errors import LLMGenerateError, ScriptoriumError, scrub_chain, translate
from scriptorium.llm.client import ReasoningChunk, StreamItem
from scriptorium.llm.model import LLMRequest, LLMResponse
from scriptorium.llm.secrets import StreamScrub, scrub_response
from scriptorium.redaction import redact
from scriptorium.usecase.model import PreparedRun
from scriptorium.usecase.repair import RepairResult
from scriptorium.usecase.unicode import clean_response

__all__ = ["LLMBoundary", "checked_repair", "checked_response"]


class LLMBoundary:
    """Translates anything a client or repairer raises into ``LLMGenerateError`` (except a test
    double's own failure, see :func:`_test_failure`) and fills in the run's context on our own
    errors when the client left it out."""

    __slots__ = ("_prepared", "_reasoning", "_request", "_secrets", "_text", "_what")

    def __init__(
        self,
        prepared: PreparedRun,
        request: LLMRequest,
        what: str,
        signing_secrets: tuple[str, ...] = (),
    ) -> None:
        self._prepared = prepared
        self._request = request
        self._what = what
        key = request.api_key
        #: Every secret the request carries: its key, and what its route signs with.
        self._secrets: tuple[str, ...] = (
            *(() if key is None else (key.get_secret_value(),)),
            *signing_secrets,
        )
        #: A stream's answer text and reasoning, each scrubbed as it is handed out.
        self._text = StreamScrub(self._secrets)
        self._reasoning = StreamScrub(self._secrets)

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every secret the run's request carries (scrubbed from its errors and answers)."""
        return self._secrets

    def response(self, response: object) -> LLMResponse:
        """:func:`checked_response` with every secret the request carried scrubbed from it."""
        return scrub_response(checked_response(response), self._secrets)

    def streamed(self, item: object) -> list[StreamItem]:
        """What a streamed ``item`` hands out: text (answer or reasoning) with every secret the
        request carried scrubbed, a piece that may begin one held back until the next says; the
        response (the last item) checked and scrubbed, after whatever text was held. Switching
        between reasoning and answer text hands out what the other held first, so the order
        stands."""
        if isinstance(item, LLMResponse):
            return [*self.held(), self.response(item)]
        if not isinstance(item, str):
            raise LLMGenerateError(
                f"the client streamed {type(item).__name__}, not text", reason="invalid_response"
            )
        pieces: tuple[str, str]
        if isinstance(item, ReasoningChunk):
            pieces = (self._text.end(), ReasoningChunk(self._reasoning.piece(item)))
        else:
            pieces = (ReasoningChunk(self._reasoning.end()), self._text.piece(item))
        return [p for p in pieces if p]

    def held(self) -> list[StreamItem]:
        """The text held back, once the stream is over (reasoning first)."""
        pieces = (ReasoningChunk(self._reasoning.end()), self._text.end())
        return [p for p in pieces if p]

    def repair(self, result: object) -> RepairResult:
        """:func:`checked_repair` with every secret the request carried scrubbed from its
        response."""
        checked = checked_repair(result)
        response = getattr(checked, "response", None)
        if isinstance(response, LLMResponse):
            scrubbed = scrub_response(response, self._secrets)
            if scrubbed is not response:
                return checked.model_copy(update={"response": scrubbed})
        return checked

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: Any
    ) -> None:
        if err is None or not isinstance(err, Exception) or _test_failure(err):
            return
        prepared = self._prepared
        context = {
            "prompt_id": prepared.prompt_id,
            "profile": prepared.profile,
            "provider": prepared.target.provider,
            "model": prepared.target.model,
        }
        secrets = list(self._secrets)
        if isinstance(err, ScriptoriumError):
            # Ours, but possibly from a custom client that put the key in its message or chained
            # an SDK error holding it: scrubbed here, where foreign errors enter the run.
            _scrub_own(err, secrets)
            if isinstance(err, LLMGenerateError):
                for name, value in context.items():
                    if getattr(err, name, None) is None:
                        setattr(err, name, value)
            return
        with translate(
            LLMGenerateError, self._what, secrets=secrets, reason="server_error", **context
        ):
            raise err


def _scrub_own(err: ScriptoriumError, secrets: list[str]) -> None:
    if secrets:
        message = redact(err.message, secrets)
        if message != err.message:
            err.message = message
            err.args = (message,)
    if err.__cause__ is not None or err.__context__ is not None:
        scrub_chain(err, secrets)


def _test_failure(err: BaseException) -> bool:
    """Whether ``err`` is a test double failing the test (``FakeClient()`` called by code that
    must make no call): an ``AssertionError`` marked ``fails_the_test``. It must reach the test
    runner as itself, not as a provider error; any other exception is translated as usual."""
    return isinstance(err, AssertionError) and getattr(err, "fails_the_test", False) is True


def checked_response(response: object) -> LLMResponse:
    """``response`` if it is an ``LLMResponse`` (lone surrogates replaced: see
    :mod:`scriptorium.usecase.unicode`); a client returning anything else is not trusted."""
    if isinstance(response, LLMResponse):
        return clean_response(response)
    raise LLMGenerateError(
        f"the client returned {type(response).__name__}, not an LLMResponse",
        reason="invalid_response",
    )


def checked_repair(result: object) -> RepairResult:
    """``result`` if it is a ``RepairResult`` (its response checked like any other)."""
    if isinstance(result, RepairResult):
        response = getattr(result, "response", None)
        if isinstance(response, LLMResponse):
            cleaned = clean_response(response)
            if cleaned is not response:
                return result.model_copy(update={"response": cleaned})
        return result
    raise LLMGenerateError(
        f"the repairer returned {type(result).__name__}, not a RepairResult",
        reason="invalid_response",
    )
