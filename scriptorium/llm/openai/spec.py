"""The OpenAI provider's registry entry: everything scriptorium knows about it, declared from
this package. Loading it loads no SDK and no adapter code: the callables behind the adapter are
named with :func:`~scriptorium.llm.registry.lazy` and imported on first use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

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
from scriptorium.llm.openai.apis import api_problems
from scriptorium.llm.openai.azure import credential_problem, is_azure, option_problems, route
from scriptorium.llm.openai.reasoning import reasoning_plan
from scriptorium.llm.openai.servers import enforcement_warning, server_problems
from scriptorium.llm.registry import ProviderSpec, RequestProblem, lazy

if TYPE_CHECKING:
    from scriptorium.llm.media.limits import MediaLimits
    from scriptorium.llm.model import LLMRequest

__all__ = ["SPEC"]


def _option_problems(options: Mapping[str, Any], source: str | None = None) -> list[str]:
    """The platform's options, ``options.api`` and ``options.server`` (for ``check``)."""
    return [*option_problems(options, source), *api_problems(options), *server_problems(options)]


def _media(endpoint: str | None, options: Mapping[str, Any], profile: str | None) -> MediaLimits:
    # Azure serves OpenAI's own models: OpenAI's media rules, whatever its endpoint.
    return MEDIA_LIMITS if is_azure(options) else openai_limits(endpoint, options, profile=profile)


def _request_problem(request: LLMRequest) -> RequestProblem | None:
    # What an Azure request cannot be sent with, then the options no API or server takes.
    problem = credential_problem(request)
    if problem is not None:
        field = "endpoint" if "endpoint" in problem else "options.azure_ad_token_env"
        return RequestProblem(field, problem)
    for field, problems in (
        ("options.api", api_problems(request.options)),
        ("options.server", server_problems(request.options)),
    ):
        if problems:
            return RequestProblem(field, problems[0])
    return None


SPEC = ProviderSpec(
    name=PROVIDER,
    client=lazy("scriptorium.llm.openai.client", "OpenAIClient.from_config"),
    per_profile=False,
    needs_key=True,
    key_env=KEY_ENV,
    base_url_env=BASE_URL_ENV,
    extra="openai",
    sdk_module="openai",
    ignored_settings=IGNORED_SETTINGS,
    request_problem=_request_problem,
    wire=lazy("scriptorium.llm.openai.wire", "wire_view"),
    media=_media,
    batches=lazy("scriptorium.llm.openai.batches", "batches_for"),
    batch_limits=BATCH_LIMITS,
    prices=PRICES,
    classify=lazy("scriptorium.llm.openai.sdk", "classify"),
    route=route,
    check_options=_option_problems,
    reasoning=reasoning_plan,
    structured_warning=enforcement_warning,
    structured_wire=lazy("scriptorium.llm.openai.wire", "structured_members"),
)
