"""The ``bedrock`` provider's registry entry: everything scriptorium knows about it, wired from
this package. Loading it loads no SDK and no adapter code; each function below imports what it
needs on first use."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from scriptorium.llm.bedrock.api import (
    IGNORED_SETTINGS,
    MEDIA_LIMITS,
    PRICES,
    PROVIDER,
    option_problems,
    route,
)
from scriptorium.llm.registry import ProviderConfig, ProviderSpec, WireView

if TYPE_CHECKING:
    from scriptorium.llm.client import Client
    from scriptorium.llm.media.limits import MediaLimits
    from scriptorium.llm.model import Failure, LLMRequest

__all__ = ["SPEC"]


def _client(config: ProviderConfig) -> Client:
    from scriptorium.llm.bedrock.client import BedrockClient

    return BedrockClient(options=config.options, hooks=config.hooks)


def _wire(request: LLMRequest) -> WireView:
    from scriptorium.llm.bedrock.body import wire_view

    return wire_view(request)


def _media(endpoint: str | None, options: Mapping[str, Any], profile: str | None) -> MediaLimits:
    return MEDIA_LIMITS


def _classify(err: BaseException) -> Failure:
    from scriptorium.llm.bedrock.sdk import classify

    return classify(err)


def _check(options: Mapping[str, Any], source: str | None) -> Iterable[str]:
    return option_problems(options, source)


SPEC = ProviderSpec(
    name=PROVIDER,
    client=_client,
    # The region and shared profile are in the profile's options.
    per_profile=True,
    # Bedrock serves many models and every profile names one; its route says no key is read
    # (AWS credentials sign the requests).
    needs_key=True,
    extra="bedrock",
    sdk_module="boto3",
    ignored_settings=IGNORED_SETTINGS,
    wire=_wire,
    media=_media,
    check_options=_check,
    prices=PRICES,
    classify=_classify,
    route=route,
)
