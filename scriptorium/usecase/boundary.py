"""The LLM boundary of a run: whatever a client or repairer raises or returns is checked and
translated here, in one place, for both the sync and the async driver."""

from __future__ import annotations

from typing import Any

from scriptorium.errors import LLMGenerateError, ScriptoriumError, translate
from scriptorium.llm.model import LLMRequest, LLMResponse
from scriptorium.usecase.model import PreparedRun
from scriptorium.usecase.repair import RepairResult

__all__ = ["LLMBoundary", "checked_repair", "checked_response"]


class LLMBoundary:
    """Translates anything a client or repairer raises into ``LLMGenerateError`` (except an
    ``AssertionError``, a test's own failure) and fills in the run's context on our own errors
    when the client left it out."""

    __slots__ = ("_prepared", "_request", "_what")

    def __init__(self, prepared: PreparedRun, request: LLMRequest, what: str) -> None:
        self._prepared = prepared
        self._request = request
        self._what = what

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: Any
    ) -> None:
        # An AssertionError is a test double saying the test failed (``FakeClient()`` called when
        # no call was expected): it must reach the test runner as itself, not as a provider error.
        if err is None or not isinstance(err, Exception) or isinstance(err, AssertionError):
            return
        prepared = self._prepared
        context = {
            "prompt_id": prepared.prompt_id,
            "profile": prepared.profile,
            "provider": prepared.target.provider,
            "model": prepared.target.model,
        }
        if isinstance(err, LLMGenerateError):
            for name, value in context.items():
                if getattr(err, name, None) is None:
                    setattr(err, name, value)
            return
        if isinstance(err, ScriptoriumError):
            return
        key = self._request.api_key
        secrets = [key.get_secret_value()] if key is not None else []
        with translate(
            LLMGenerateError, self._what, secrets=secrets, reason="server_error", **context
        ):
            raise err


def checked_response(response: object) -> LLMResponse:
    """``response`` if it is an ``LLMResponse``; a client returning anything else is not trusted."""
    if isinstance(response, LLMResponse):
        return response
    raise LLMGenerateError(
        f"the client returned {type(response).__name__}, not an LLMResponse",
        reason="invalid_response",
    )


def checked_repair(result: object) -> RepairResult:
    """``result`` if it is a ``RepairResult``."""
    if isinstance(result, RepairResult):
        return result
    raise LLMGenerateError(
        f"the repairer returned {type(result).__name__}, not a RepairResult",
        reason="invalid_response",
    )
