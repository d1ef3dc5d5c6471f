"""The built-in provider specs: anthropic, openai, fake and replay.

Each spec names its adapter code through functions that import it on first use, so loading a
spec loads no SDK.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.batches import ANTHROPIC_LIMITS as ANTHROPIC_BATCH_LIMITS
from scriptorium.llm.batches import OPENAI_LIMITS as OPENAI_BATCH_LIMITS
from scriptorium.llm.batches import BatchLimits, BatchProvider
from scriptorium.llm.registry import ProviderConfig, ProviderSpec, WireView

if TYPE_CHECKING:
    from scriptorium.llm.client import Client
    from scriptorium.llm.media import MediaLimits
    from scriptorium.llm.model import LLMRequest
    from scriptorium.llm.retry import RetryHooks

__all__ = ["ANTHROPIC", "FAKE", "OPENAI", "REPLAY"]


# --- anthropic ---------------------------------------------------------------------------------


def _anthropic_client(config: ProviderConfig) -> Client:
    from scriptorium.llm.anthropic import AnthropicClient

    return AnthropicClient(hooks=config.hooks)


def _anthropic_wire(request: LLMRequest) -> WireView:
    from scriptorium.llm.wire import anthropic_view

    return anthropic_view(request)


def _anthropic_media(
    endpoint: str | None, options: Mapping[str, Any], profile: str | None
) -> MediaLimits:
    from scriptorium.llm.media import ANTHROPIC_LIMITS

    return ANTHROPIC_LIMITS


def _anthropic_batches(
    request: LLMRequest, limits: BatchLimits | None, hooks: RetryHooks
) -> BatchProvider:
    from scriptorium.batch.anthropic_batches import AnthropicBatches

    key = request.api_key.get_secret_value() if request.api_key is not None else ""
    return AnthropicBatches(key=key, base_url=request.target.endpoint, limits=limits, hooks=hooks)


ANTHROPIC = ProviderSpec(
    name="anthropic",
    client=_anthropic_client,
    per_profile=False,
    needs_key=True,
    key_env="ANTHROPIC_API_KEY",
    base_url_env="ANTHROPIC_BASE_URL",
    extra="anthropic",
    sdk_module="anthropic",
    # The current Messages API refuses temperature, top_p and top_k at any value.
    ignored_settings=("temperature", "top_p", "top_k"),
    wire=_anthropic_wire,
    media=_anthropic_media,
    batches=_anthropic_batches,
    batch_limits=ANTHROPIC_BATCH_LIMITS,
)


# --- openai ------------------------------------------------------------------------------------


def _openai_client(config: ProviderConfig) -> Client:
    from scriptorium.llm.openai import OpenAIClient

    return OpenAIClient(hooks=config.hooks)


def _openai_wire(request: LLMRequest) -> WireView:
    from scriptorium.llm.wire import openai_view

    return openai_view(request)


def _openai_media(
    endpoint: str | None, options: Mapping[str, Any], profile: str | None
) -> MediaLimits:
    from scriptorium.llm.media import openai_limits

    return openai_limits(endpoint, options, profile=profile)


def _openai_batches(
    request: LLMRequest, limits: BatchLimits | None, hooks: RetryHooks
) -> BatchProvider:
    from scriptorium.batch.openai_batches import OpenAIBatches

    key = request.api_key.get_secret_value() if request.api_key is not None else ""
    return OpenAIBatches(key=key, base_url=request.target.endpoint, limits=limits, hooks=hooks)


OPENAI = ProviderSpec(
    name="openai",
    client=_openai_client,
    per_profile=False,
    needs_key=True,
    key_env="OPENAI_API_KEY",
    base_url_env="OPENAI_BASE_URL",
    extra="openai",
    sdk_module="openai",
    # Chat Completions has no top_k and refuses unknown parameters.
    ignored_settings=("top_k",),
    wire=_openai_wire,
    media=_openai_media,
    batches=_openai_batches,
    batch_limits=OPENAI_BATCH_LIMITS,
)


# --- fake and replay -----------------------------------------------------------------------------


def _fake_client(config: ProviderConfig) -> Client:
    from scriptorium.llm.fake import FakeProviderClient

    return FakeProviderClient.from_options(config.options)


def _replay_client(config: ProviderConfig) -> Client:
    from scriptorium.llm.replay import ReplayClient, cassette_location

    options = config.options
    root, relative = cassette_location(options.get("cassette"), config.source)
    mode = options.get("mode", "replay")
    inner: Client | None = None
    if mode == "record":
        record_provider = options.get("record_provider")
        if not isinstance(record_provider, str) or record_provider in ("", REPLAY.name):
            raise LLMGenerateError(
                "replay provider: record mode needs options.record_provider (a provider other "
                "than replay)",
                reason="config",
                provider=REPLAY.name,
            )
        assert config.resolve is not None  # the router always supplies it
        inner = config.resolve(record_provider)
    return ReplayClient(Path(relative), mode=mode, inner=inner, root=root)


def _replay_options(options: Mapping[str, Any], source: str | None) -> Iterator[str]:
    from scriptorium.llm.replay import cassette_problems

    return cassette_problems(options, source)


FAKE = ProviderSpec(name="fake", client=_fake_client)
REPLAY = ProviderSpec(name="replay", client=_replay_client, check_options=_replay_options)
