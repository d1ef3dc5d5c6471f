"""The ``bedrock`` provider: any model on Amazon Bedrock through the Converse API, with boto3.

- boto3 is imported on first use (:mod:`.sdk`; missing -> ``reason="provider_unavailable"``),
  its retries off; one ``bedrock-runtime`` client per place (endpoint, region, shared profile)
  and read timeout, reused (:class:`~scriptorium.llm._clients.ClientCache`). boto3 has no async
  client: async calls run the same client in a worker thread.
- AWS credentials come from botocore's standard chain, never from a key; the secret access key
  and session token found are redacted from every message, as a key is.
- ``verify`` sends the shared minimal request; token counting is the local estimate (Converse
  has no counting route for every model).

Request mapping, structured output, usage, endings: :mod:`.body`, :mod:`.call`, :mod:`.stream`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from pydantic import SecretStr

from scriptorium.llm.adapter import SDKAdapter, SDKFactory
from scriptorium.llm.bedrock.api import PROVIDER
from scriptorium.llm.bedrock.call import ConverseCall
from scriptorium.llm.bedrock.sdk import classify, default_factory
from scriptorium.llm.bedrock.stream import astream as stream_async
from scriptorium.llm.bedrock.stream import stream as stream_sync
from scriptorium.llm.client import StreamItem
from scriptorium.llm.model import Failure, LLMRequest, LLMResponse, Target
from scriptorium.llm.retry.policy import RetryHooks

__all__ = ["BedrockClient"]


class BedrockClient(SDKAdapter):
    """``Client``, ``AsyncClient``, streaming and ``verify`` for the ``bedrock`` provider (see
    the module). ``options`` are the profile's (``region``, ``aws_profile``); ``hooks`` drive
    the retry loop; ``sdk_factory(is_async, key, place)`` builds boto3 clients."""

    provider = PROVIDER
    verify_max_tokens = 8

    def __init__(
        self,
        *,
        options: Mapping[str, Any] | None = None,
        hooks: RetryHooks | None = None,
        sdk_factory: SDKFactory | None = None,
    ) -> None:
        super().__init__(hooks=hooks, sdk_factory=sdk_factory or default_factory)
        self.options = dict(options or {})

    def call(self, request: LLMRequest) -> ConverseCall:
        """The ``converse`` call for ``request`` (checked, arguments built)."""
        return ConverseCall(request, {**self.options, **request.options})

    def classify(self, err: BaseException) -> Failure:
        """The adapter's one classifier (:func:`.sdk.classify`)."""
        return classify(err)

    def stream(self, request: LLMRequest) -> Iterator[StreamItem]:
        """One answer streamed through ``converse_stream`` (see :mod:`.stream`)."""
        return stream_sync(self.clients, self.hooks, request, {**self.options, **request.options})

    def astream(self, request: LLMRequest) -> AsyncIterator[StreamItem]:
        """The async twin of :meth:`stream`."""
        return stream_async(self.clients, self.hooks, request, {**self.options, **request.options})

    def verify(
        self,
        target: Target,
        api_key: SecretStr | str | None,
        *,
        options: Mapping[str, Any] | None = None,
    ) -> LLMResponse:
        """The shared minimal request, in the region ``options`` name (None: this client's)."""
        return super().verify(target, api_key, options=self.options if options is None else options)
