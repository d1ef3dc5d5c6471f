"""The ``openai`` provider: OpenAI and OpenAI-compatible servers through the official SDK.

One adapter serves api.openai.com and the servers that speak its Chat Completions API (vLLM,
Ollama, llama.cpp server, ...) through ``target.endpoint``, the base URL *including* ``/v1``, and
OpenAI's Responses API where the profile's ``options.api`` chooses it (:mod:`.apis`).

- The SDK is imported on first use (:mod:`.sdk`; missing -> ``reason="provider_unavailable"``),
  built with ``max_retries=0`` and nothing read from the environment. Each request gets the time
  left of the budget as its timeout.
- One SDK client per (endpoint, key digest), reused; async clients are kept per event loop, since
  an async client belongs to the loop it first ran on. ``sdk_factory`` builds them.
- The body is built by :func:`.body.build_params`, encoded by us and sent with the SDK's
  lower-level ``post``: the SDK's auth, headers, base URL, timeout and error types, without its
  typed layer, which walks and transforms every parameter against its type annotations on each
  call (about 0.5 ms per call on the development machine). What ``prepare`` shows is then exactly
  the body sent.
- The response body is parsed here (:func:`.call.parse_completion`), not by the SDK, so a
  non-JSON or wrong-shaped 200 is a clean ``invalid_response`` instead of a half-filled model
  object.

Request mapping, structured-output strategies and usage semantics: ``internal_docs/llm.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scriptorium.llm.adapter import SDKAdapter, SDKFactory
from scriptorium.llm.model import LLMRequest, Uncounted
from scriptorium.llm.openai.api import PROVIDER
from scriptorium.llm.openai.apis import api_of
from scriptorium.llm.openai.azure import Deployment, azure_client
from scriptorium.llm.openai.call import Call
from scriptorium.llm.openai.counting import count_input_tokens
from scriptorium.llm.openai.responses_call import ResponsesCall
from scriptorium.llm.openai.responses_stream import ResponsesSource
from scriptorium.llm.openai.sdk import classify, default_factory
from scriptorium.llm.openai.stream import Source
from scriptorium.llm.retry.policy import RetryHooks

__all__ = ["AzureFactory", "OpenAIClient", "SDKFactory"]

#: ``azure_factory(is_async, key_or_token, deployment)`` -> the SDK client of one Azure
#: deployment (default: ``AzureOpenAI`` / ``AsyncAzureOpenAI``, retries off).
AzureFactory = Callable[[bool, str, Deployment], Any]


class OpenAIClient(SDKAdapter[Call]):
    """``Client``, ``AsyncClient``, streaming and ``verify`` for the ``openai`` provider (see the
    module). ``hooks`` inject clock, sleep, jitter and supervision into the retry loop;
    ``sdk_factory`` builds SDK clients (default: the real SDK, retries off), ``azure_factory``
    those of an Azure deployment."""

    provider = PROVIDER
    # Reasoning models spend output tokens before they answer, and OpenAI refuses output budgets
    # below 16 on some endpoints: the smallest verify that works for every model.
    verify_max_tokens = 16
    classify = staticmethod(classify)
    default_factory = staticmethod(default_factory)

    def __init__(
        self,
        *,
        hooks: RetryHooks | None = None,
        sdk_factory: SDKFactory | None = None,
        azure_factory: AzureFactory | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        direct = sdk_factory or self.default_factory
        azure = azure_factory or azure_client

        def make(is_async: bool, key: str, where: Any) -> Any:
            # The cache tells clients apart by base URL, or by an Azure deployment.
            if isinstance(where, Deployment):
                return azure(is_async, key, where)
            return direct(is_async, key, where)

        super().__init__(hooks=hooks, sdk_factory=make, options=options)

    def call(self, request: LLMRequest) -> Call:
        """The call for ``request`` on the API its profile's ``options.api`` chooses (Chat
        Completions or the Responses API: :mod:`.apis`), checked, parameters built."""
        return ResponsesCall(request) if api_of(request) == "responses" else Call(request)

    @staticmethod
    def stream_source(call: Call) -> Source:
        """The stream of ``call``'s API (:mod:`.stream`, :mod:`.responses_stream`)."""
        return ResponsesSource(call) if isinstance(call, ResponsesCall) else Source(call)

    def count_tokens(self, request: LLMRequest) -> int | Uncounted:
        """The input tokens of what :meth:`generate` would send for ``request``: the Responses
        API's input-token count where the SDK has it, else :class:`Uncounted` saying why (the
        caller estimates; :mod:`.counting`)."""
        call = self.call(request)
        client = self.clients.sync(call.slot, call.key)
        return count_input_tokens(call, client, self.hooks)
