"""The Anthropic provider's registry entry: everything scriptorium knows about it, declared from
this package. Loading it loads no SDK and no adapter code: the callables behind the adapter are
named with :func:`~scriptorium.llm.registry.lazy` and imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

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
from scriptorium.llm.registry import ProviderSpec, RequestProblem, lazy

if TYPE_CHECKING:
    from scriptorium.llm.model import LLMRequest

__all__ = ["SPEC"]


def _request_problem(request: LLMRequest) -> RequestProblem | None:
    # The credential a cloud platform cannot take is refused at prepare, before any call.
    problem = credential_problem(request)
    return None if problem is None else RequestProblem("api_key_env", problem)


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
    client=lazy("scriptorium.llm.anthropic.client", "AnthropicClient.from_config"),
    per_profile=False,
    needs_key=True,
    key_env=KEY_ENV,
    base_url_env=BASE_URL_ENV,
    extra="anthropic",
    sdk_module="anthropic",
    ignored_settings=IGNORED_SETTINGS,
    request_problem=_request_problem,
    wire=lazy("scriptorium.llm.anthropic.body", "wire_view"),
    media=media_limits,
    batches=lazy("scriptorium.llm.anthropic.batches", "batches_for"),
    batch_limits=BATCH_LIMITS,
    prices=PRICES,
    cache_minimum=lazy("scriptorium.llm.anthropic.cache", "minimum_cacheable_tokens"),
    classify=lazy("scriptorium.llm.anthropic.sdk", "classify"),
    reasoning=reasoning_plan,
    endpoint_problem=_endpoint_problem,
    route=route,
    check_options=option_problems,
)
