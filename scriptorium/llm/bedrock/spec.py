"""The ``bedrock`` provider's registry entry: everything scriptorium knows about it, declared
from this package. Loading it loads no SDK and no adapter code: the callables behind the adapter
are named with :func:`~scriptorium.llm.registry.lazy` and imported on first use."""

from __future__ import annotations

from scriptorium.llm.bedrock.api import (
    IGNORED_SETTINGS,
    MEDIA_LIMITS,
    PRICES,
    PROVIDER,
    option_problems,
    route,
)
from scriptorium.llm.registry import ProviderSpec, lazy

__all__ = ["SPEC"]

SPEC = ProviderSpec(
    name=PROVIDER,
    client=lazy("scriptorium.llm.bedrock.client", "BedrockClient.from_config"),
    # The region and shared profile are in the profile's options.
    per_profile=True,
    # Bedrock serves many models and every profile names one; its route says no key is read
    # (AWS credentials sign the requests).
    needs_key=True,
    extra="bedrock",
    sdk_module="boto3",
    ignored_settings=IGNORED_SETTINGS,
    wire=lazy("scriptorium.llm.bedrock.body", "wire_view"),
    media=MEDIA_LIMITS,
    check_options=option_problems,
    prices=PRICES,
    classify=lazy("scriptorium.llm.bedrock.sdk", "classify"),
    route=route,
)
