"""The ``mock`` provider: every request gets the response configured in
``CC_LLM_MOCK_RESPONSE_JSON``, verbatim.

It is a plain :class:`~scriptorium.llm.client.Client`, so raw payloads and prompt runs use it the
same way. Its ``cost_micro`` is charged as given: no price table is consulted, so a supervisor's
test can put exact numbers into its ledger.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from scriptorium._journal import load_json
from scriptorium.errors import LLMGenerateError, translate
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage

__all__ = ["MOCK_ENV", "MockClient"]

MOCK_ENV = "CC_LLM_MOCK_RESPONSE_JSON"


class _MockResponse(BaseModel):
    """The fields of ``CC_LLM_MOCK_RESPONSE_JSON``. Others are ignored: the variable is a convention
    shared with other workers of the same supervisor, which may read more."""

    model_config = ConfigDict(frozen=True, extra="ignore", strict=True, protected_namespaces=())

    text: str = ""
    tokens_input: int = Field(default=0, ge=0)
    tokens_output: int = Field(default=0, ge=0)
    cost_micro: int = Field(default=0, ge=0)
    #: Empty: the request's model.
    model: str = ""
    finish_reason: str = "stop"
    metadata: dict[str, Any] = Field(default_factory=dict)


class MockClient:
    """A ``Client`` answering every request with one fixed response."""

    provider = "mock"

    def __init__(self, response: LLMResponse) -> None:
        self._response = response

    @classmethod
    def from_json(cls, text: str | None) -> MockClient:
        """The client ``CC_LLM_MOCK_RESPONSE_JSON`` describes; ``LLMGenerateError(reason="config")``
        when it is unset, not a JSON object, or a field has the wrong type or a negative count."""
        if not text or not text.strip():
            raise LLMGenerateError(
                f"CC_LLM_PROVIDER=mock needs {MOCK_ENV} (a JSON object with text, tokens_input, "
                "tokens_output, cost_micro, model, finish_reason, metadata)",
                reason="config",
                provider="mock",
            )
        with translate(LLMGenerateError, f"invalid {MOCK_ENV}", reason="config", provider="mock"):
            data = load_json(text)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            spec = _MockResponse.model_validate(data)
        usage = Usage(
            input_tokens=spec.tokens_input,
            output_tokens=spec.tokens_output,
            cost_micro=spec.cost_micro,
            llm_calls=1,
        )
        return cls(
            LLMResponse(
                text=spec.text,
                model=spec.model,
                finish_reason=spec.finish_reason,
                usage=usage,
                metadata=spec.metadata,
            )
        )

    def generate(self, request: LLMRequest) -> LLMResponse:
        """The configured response (its model defaults to the request's)."""
        if self._response.model:
            return self._response
        return self._response.model_copy(update={"model": request.target.model})
