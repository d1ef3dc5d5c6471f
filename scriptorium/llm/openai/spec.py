"""The OpenAI provider's registry entry: everything scriptorium knows about it, wired from this
package. Loading it loads no SDK and no adapter code; each function below imports what it needs on
first use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scriptorium.errors import InvalidRequestError
from scriptorium.llm.adapter import key_of
from scriptorium.llm.openai.api import (
    BASE_URL_ENV,
    BATCH_LIMITS,
    IGNORED_SETTINGS,
    KEY_ENV,
    MEDIA_LIMITS,
    PRICES,
    PROVIDER,
    openai_limits,
)
from scriptorium.llm.openai.apis import api_of, api_problems
from scriptorium.llm.openai.azure import (
    credential_problem,
    deployment_of,
    is_azure,
    option_problems,
    route,
)
from scriptorium.llm.openai.reasoning import reasoning_plan
from scriptorium.llm.openai.servers import enforcement_warning, server_problems
from scriptorium.llm.registry import ProviderConfig, ProviderSpec, WireView

if TYPE_CHECKING:
    from scriptorium.llm.batches.port import BatchLimits, BatchProvider
    from scriptorium.llm.client import Client
    from scriptorium.llm.media.limits import MediaLimits
    from scriptorium.llm.model import Failure, LLMRequest
    from scriptorium.llm.retry.policy import RetryHooks

__all__ = ["SPEC"]


def _client(config: ProviderConfig) -> Client:
    from scriptorium.llm.openai.client import OpenAIClient

    return OpenAIClient(hooks=config.hooks)


def _wire(request: LLMRequest) -> WireView:
    # The API the request travels on (options.api) decides what is shown as sent.
    if api_of(request) == "responses":
        from scriptorium.llm.openai.responses_body import responses_wire_view

        return responses_wire_view(request)
    from scriptorium.llm.openai.body import wire_view

    return wire_view(request)


def _structured_wire(request: LLMRequest) -> dict[str, Any]:
    """The members of the body that ask for the structured output, as they go out."""
    if api_of(request) == "responses":
        from scriptorium.llm.openai.responses_body import build_responses_params as build
    else:
        from scriptorium.llm.openai.body import build_params as build
    params, _ = build(request)
    names = ("response_format", "text", "tools", "tool_choice")
    return {name: params[name] for name in names if name in params}


def _option_problems(options: Mapping[str, Any], source: str | None = None) -> list[str]:
    """The platform's options, ``options.api`` and ``options.server`` (for ``check``)."""
    return [*option_problems(options, source), *api_problems(options), *server_problems(options)]


def _media(endpoint: str | None, options: Mapping[str, Any], profile: str | None) -> MediaLimits:
    # Azure serves OpenAI's own models: OpenAI's media rules, whatever its endpoint.
    return MEDIA_LIMITS if is_azure(options) else openai_limits(endpoint, options, profile=profile)


def _wire_checked(request: LLMRequest) -> WireView:
    # At prepare: what an Azure request cannot be sent with is refused before any call.
    problem = credential_problem(request)
    if problem is not None:
        field = "endpoint" if "endpoint" in problem else "options.azure_ad_token_env"
        raise InvalidRequestError(problem, field=field)
    for field, problems in (
        ("options.api", api_problems(request.options)),
        ("options.server", server_problems(request.options)),
    ):
        if problems:
            raise InvalidRequestError(problems[0], field=field)
    return _wire(request)


def _batches(request: LLMRequest, limits: BatchLimits | None, hooks: RetryHooks) -> BatchProvider:
    from scriptorium.llm.openai.batches import OpenAIBatches

    return OpenAIBatches(
        key=key_of(request),
        base_url=request.target.endpoint,
        limits=limits,
        hooks=hooks,
        model=request.target.model,
        deployment=deployment_of(request),
    )


def _classify(err: BaseException) -> Failure:
    from scriptorium.llm.openai.sdk import classify

    return classify(err)


SPEC = ProviderSpec(
    name=PROVIDER,
    client=_client,
    per_profile=False,
    needs_key=True,
    key_env=KEY_ENV,
    base_url_env=BASE_URL_ENV,
    extra="openai",
    sdk_module="openai",
    ignored_settings=IGNORED_SETTINGS,
    wire=_wire_checked,
    media=_media,
    batches=_batches,
    batch_limits=BATCH_LIMITS,
    prices=PRICES,
    classify=_classify,
    route=route,
    check_options=_option_problems,
    reasoning=reasoning_plan,
    structured_warning=enforcement_warning,
    structured_wire=_structured_wire,
)
