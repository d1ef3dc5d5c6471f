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

from scriptorium.llm.adapter import SDKAdapter
from scriptorium.llm.bedrock.api import PROVIDER
from scriptorium.llm.bedrock.call import ConverseCall
from scriptorium.llm.bedrock.sdk import classify, default_factory
from scriptorium.llm.bedrock.stream import drive_converse
from scriptorium.llm.model import LLMRequest

__all__ = ["BedrockClient"]


class BedrockClient(SDKAdapter[ConverseCall]):
    """``Client``, ``AsyncClient``, streaming and ``verify`` for the ``bedrock`` provider (see
    the module). ``options`` are the profile's (``region``, ``aws_profile``); ``hooks`` drive
    the retry loop; ``sdk_factory(is_async, key, place)`` builds boto3 clients."""

    provider = PROVIDER
    verify_max_tokens = 8
    classify = staticmethod(classify)
    default_factory = staticmethod(default_factory)
    # ``converse_stream`` is read by its own driver (botocore decodes the events), on the sync
    # client; boto3 has no async client, so an async stream runs it in a worker thread.
    stream_drive = staticmethod(drive_converse)
    stream_adrive = None

    def call(self, request: LLMRequest) -> ConverseCall:
        """The ``converse`` call for ``request`` (checked, arguments built), in the region its
        options name (else this client's)."""
        return ConverseCall(request, {**self.options, **request.options})
