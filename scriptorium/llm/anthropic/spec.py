"""The Anthropic provider's registry entry: everything scriptorium knows about it, wired from this
package. Loading it loads no SDK and no adapter code; each function below imports what it needs on
first use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scriptorium.errors import InvalidRequestError
from scriptorium.llm.adapter import key_of
from scriptorium.llm.anthropic.api import (
    BASE_URL_ENV,
    BATCH_LIMITS,
    IGNORED_SETTINGS,
    KEY_ENV,
    PRICES,
    PROVIDER,
)
from scriptorium.llm.anthropic.platforms import (
    credential_problem,
    media_limits,
    option_problems,
    route,
)
from scriptorium.llm.anthropic.reasoning import reasoning_plan
from scriptorium.llm.registry import ProviderConfig, ProviderSpec, WireView

if TYPE_CHECKING:
    from scriptorium.llm.batches.port import BatchLimits, BatchProvider
    from scriptorium.llm.client import Client
    from scriptorium.llm.media.limits import MediaLimits
    from scriptorium.llm.model import Failure, LLMRequest
    from scriptorium.llm.retry.policy import RetryHooks

__all__ = ["SPEC"]


def _client(config: ProviderConfig) -> Client:
    from scriptorium.llm.anthropic.client import AnthropicClient

    return AnthropicClient(hooks=config.hooks)


def _wire(request: LLMRequest) -> WireView:
    from scriptorium.llm.anthropic.body import wire_view

    return wire_view(request)


def _media(endpoint: str | None, options: Mapping[str, Any], profile: str | None) -> MediaLimits:
    return media_limits(options)


def _wire_checked(request: LLMRequest) -> WireView:
    # At prepare: the credential a cloud platform cannot take is refused before any call.
    problem = credential_problem(request)
    if problem is not None:
        raise InvalidRequestError(problem, field="api_key_env")
    return _wire(request)


def _batches(request: LLMRequest, limits: BatchLimits | None, hooks: RetryHooks) -> BatchProvider:
    from scriptorium.llm.anthropic.batches import AnthropicBatches

    platform = request.options.get("platform")
    if platform is not None:
        raise InvalidRequestError(
            f"provider batches are not built for anthropic on {platform}: its batch jobs read "
            "and write cloud storage (S3, Cloud Storage); run the rows without --provider-batch",
            field="options.platform",
        )

    return AnthropicBatches(
        key=key_of(request),
        base_url=request.target.endpoint,
        limits=limits,
        hooks=hooks,
        model=request.target.model,
    )


def _cache_minimum(model: str) -> int | None:
    from scriptorium.llm.anthropic.cache import minimum_cacheable_tokens

    return minimum_cacheable_tokens(model)


def _classify(err: BaseException) -> Failure:
    from scriptorium.llm.anthropic.sdk import classify

    return classify(err)


def _endpoint_problem(endpoint: str) -> str | None:
    # The SDK appends /v1/messages to the base URL: one ending in /v1 would post to
    # /v1/v1/messages and come back as a bare not_found.
    path = urlsplit(endpoint).path.rstrip("/")
    if path.endswith("/v1"):
        return (
            f"an Anthropic endpoint is the base URL without /v1 (the SDK adds /v1/messages): "
            f"drop the trailing /v1 from {endpoint}"
        )
    return None


SPEC = ProviderSpec(
    name=PROVIDER,
    client=_client,
    per_profile=False,
    needs_key=True,
    key_env=KEY_ENV,
    base_url_env=BASE_URL_ENV,
    extra="anthropic",
    sdk_module="anthropic",
    ignored_settings=IGNORED_SETTINGS,
    wire=_wire_checked,
    media=_media,
    batches=_batches,
    batch_limits=BATCH_LIMITS,
    prices=PRICES,
    cache_minimum=_cache_minimum,
    classify=_classify,
    reasoning=reasoning_plan,
    endpoint_problem=_endpoint_problem,
    route=route,
    check_options=option_problems,
)
