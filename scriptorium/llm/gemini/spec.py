"""The Gemini provider's registry entry: everything scriptorium knows about it, wired from this
package. Loading it loads no SDK and no adapter code; each function below imports what it needs on
first use."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from scriptorium.llm.gemini.api import (
    BASE_URL_ENV,
    BATCH_LIMITS,
    IGNORED_SETTINGS,
    KEY_ENV,
    MEDIA_LIMITS,
    PRICES,
    PROVIDER,
    option_problems,
    route,
)
from scriptorium.llm.gemini.reasoning import reasoning_plan
from scriptorium.llm.registry import ProviderConfig, ProviderSpec, WireView

if TYPE_CHECKING:
    from scriptorium.llm.batches.port import BatchLimits, BatchProvider
    from scriptorium.llm.client import Client
    from scriptorium.llm.media.limits import MediaLimits
    from scriptorium.llm.model import Failure, LLMRequest
    from scriptorium.llm.retry.policy import RetryHooks

__all__ = ["SPEC"]


def _client(config: ProviderConfig) -> Client:
    from scriptorium.llm.gemini.client import GeminiClient

    return GeminiClient(options=config.options, hooks=config.hooks)


def _wire(request: LLMRequest) -> WireView:
    from scriptorium.llm.gemini.body import wire_view

    return wire_view(request)


def _media(endpoint: str | None, options: Mapping[str, Any], profile: str | None) -> MediaLimits:
    return MEDIA_LIMITS


def _batches(request: LLMRequest, limits: BatchLimits | None, hooks: RetryHooks) -> BatchProvider:
    from scriptorium.llm.gemini.batches import batches_for

    return batches_for(request, limits, hooks)


def _classify(err: BaseException) -> Failure:
    from scriptorium.llm.gemini.sdk import classify

    return classify(err)


def _check(options: Mapping[str, Any], source: str | None) -> Iterable[str]:
    return option_problems(options, source)


SPEC = ProviderSpec(
    name=PROVIDER,
    client=_client,
    # Vertex AI's project and location are in the profile's options.
    per_profile=True,
    # The Gemini API needs a key (and so a named model); a Vertex AI profile's route says it
    # needs none (Google's default credentials, or the token its options name: ``route``).
    needs_key=True,
    key_env=KEY_ENV,
    base_url_env=BASE_URL_ENV,
    extra="gemini",
    sdk_module="google.genai",
    ignored_settings=IGNORED_SETTINGS,
    wire=_wire,
    media=_media,
    batches=_batches,
    batch_limits=BATCH_LIMITS,
    check_options=_check,
    prices=PRICES,
    classify=_classify,
    reasoning=reasoning_plan,
    route=route,
)
