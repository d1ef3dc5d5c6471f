"""OpenAI's models on Azure (``AzureOpenAI``), chosen by a profile's ``options``:

    provider: openai
    model: my-gpt4o-deployment              # the deployment's name
    endpoint: https://RESOURCE.openai.azure.com
    api_key_env: AZURE_OPENAI_API_KEY       # or options.azure_ad_token_env
    options: {platform: azure, api_version: "2024-10-21"}

Everything but where a request goes and as whom is the openai provider's (the Chat Completions
body, strategies, streaming, the reading of an answer). What this module adds: the options'
rules (:func:`option_problems`), the registry's :class:`~scriptorium.llm.registry.Route`
(:func:`route`), the SDK client of one deployment (:class:`Deployment`, :func:`azure_client`),
and how an answer is priced (:func:`priced_as`).

- The credential is a key from ``api_key_env`` (sent as the ``api-key`` header) or a Microsoft
  Entra token read like a key from the variable ``options.azure_ad_token_env`` names (sent as
  ``Authorization: Bearer``); never both. Either travels as the request's key: redacted
  everywhere a key is.
- The SDK class builds the route: ``{endpoint}/openai/deployments/{model}/chat/completions`` with
  ``api-version`` in the query; the Files and Batch API under ``{endpoint}/openai``.
- ``model`` names a deployment, not a model: an answer is priced by the model Azure reports it
  was served by, else by ``options.base_model``, else at 0 with a note saying why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.cloud import PlatformOptions
from scriptorium.llm.model import LLMRequest
from scriptorium.llm.openai.api import BASE_URL_ENV, KEY_ENV, PROVIDER
from scriptorium.llm.registry import Route
from scriptorium.profile.model import variable_name_problem

__all__ = [
    "AZURE",
    "BASE_URL_ENV_AZURE",
    "BATCH_ENDPOINT",
    "OWN_API",
    "PLATFORMS",
    "RESPONSES_BATCH_ENDPOINT",
    "Deployment",
    "azure_client",
    "credential_problem",
    "deployment_of",
    "is_azure",
    "option_problems",
    "priced_as",
    "route",
]

AZURE = "azure"
#: The platforms the openai provider can be reached through (besides its own API and the
#: OpenAI-compatible servers an endpoint names).
PLATFORMS = (AZURE,)
#: The SDK's own variable for an Azure resource's endpoint, honoured when a profile names none.
BASE_URL_ENV_AZURE = "AZURE_OPENAI_ENDPOINT"
#: What an Azure batch and each of its rows name as their endpoint (no ``/v1``), on Chat
#: Completions and on the Responses API.
BATCH_ENDPOINT = "/chat/completions"
RESPONSES_BATCH_ENDPOINT = "/responses"

_PLATFORM_ONLY = ("api_version", "azure_ad_token_env", "base_model")
_CLOUD = PlatformOptions(provider=PROVIDER, platforms=PLATFORMS, only=_PLATFORM_ONLY)
_API_VERSION = re.compile(r"^[A-Za-z0-9.-]{1,40}$")
_NAME = re.compile(r"^[A-Za-z0-9._+=,@-]{1,128}$")

#: The route of a profile of OpenAI's own API (or an OpenAI-compatible server).
OWN_API = Route(
    needs_key=True, base_url_env=BASE_URL_ENV, key_envs=(KEY_ENV,), endpoint_names_key=True
)
#: The conventional key variable of Azure OpenAI (the SDK's ``AzureOpenAI`` reads it).
AZURE_KEY_ENV = "AZURE_OPENAI_API_KEY"


def is_azure(options: Mapping[str, Any]) -> bool:
    """Whether a profile with ``options`` goes to Azure."""
    return options.get("platform") == AZURE


def option_problems(options: Mapping[str, Any], source: str | None = None) -> list[str]:
    """What is wrong with a profile's ``options`` as the openai provider reads them for a
    platform: an unknown platform, ``api_version`` missing, a variable name that is not one, an
    Azure option without the platform (for ``check``, and refused at prepare)."""
    chosen = _CLOUD.choice_problems(options)
    if chosen is not None:
        return chosen
    problems: list[str] = []
    version = options.get("api_version")
    if not isinstance(version, str) or not version.strip():
        problems.append("options.api_version is required with platform azure (e.g. '2024-10-21')")
    elif not _API_VERSION.fullmatch(version):
        problems.append(f"options.api_version {version[:40]!r} is not an API version")
    variable = options.get("azure_ad_token_env")
    if variable is not None:
        problem = variable_name_problem("options.azure_ad_token_env", variable)
        if problem is not None:
            problems.append(problem)
    base = options.get("base_model")
    if base is not None and (not isinstance(base, str) or not _NAME.fullmatch(base)):
        problems.append("options.base_model must be a model name")
    return problems


def route(options: Mapping[str, Any], profile: str | None = None) -> Route:
    """How a profile with ``options`` reaches OpenAI's models (the registry's :class:`Route`);
    ``InvalidRequestError`` naming the first problem when the options cannot be used."""
    if _CLOUD.chosen_platform(options, option_problems, profile) is None:
        return OWN_API
    token_env = options.get("azure_ad_token_env")
    return Route(
        platform=AZURE,
        needs_key=True,
        token_env=token_env if isinstance(token_env, str) else None,
        base_url_env=BASE_URL_ENV_AZURE,
        key_envs=() if token_env is not None else (AZURE_KEY_ENV,),
        no_key_env=None
        if token_env is None
        else (
            "platform azure takes a key (api_key_env) or a Microsoft Entra token "
            "(options.azure_ad_token_env), not both"
        ),
    )


def credential_problem(request: LLMRequest) -> str | None:
    """What an Azure request cannot be sent with: no resource endpoint, an endpoint that already
    holds the ``/openai`` path (the SDK adds it). A key variable beside an Entra token variable
    is the route's ``no_key_env``."""
    if not is_azure(request.options):
        return None
    endpoint = request.target.endpoint
    if not endpoint:
        return (
            "platform azure needs the resource's endpoint (endpoint: "
            "https://RESOURCE.openai.azure.com, or AZURE_OPENAI_ENDPOINT)"
        )
    if urlsplit(endpoint).path.rstrip("/"):
        return (
            f"an Azure endpoint is the resource's root (the SDK adds /openai/deployments/...): "
            f"drop the path from {endpoint}"
        )
    return None


@dataclass(frozen=True)
class Deployment:
    """One Azure deployment's SDK client, as the client cache tells them apart (no credential
    held here; ``entra`` says whether the key is an Entra token)."""

    endpoint: str
    deployment: str
    api_version: str
    entra: bool = False


def deployment_of(request: LLMRequest) -> Deployment | None:
    """The Azure deployment ``request`` goes to (None: OpenAI's API or a compatible server);
    ``LLMGenerateError`` (``reason="config"``) when its options or target cannot be used."""
    if _CLOUD.request_platform(request, option_problems, credential_problem) is None:
        return None
    options = request.options
    entra = bool(options.get("azure_ad_token_env")) and not request.target.api_key_env
    return Deployment(
        endpoint=str(request.target.endpoint).rstrip("/"),
        deployment=request.target.model,
        api_version=str(options["api_version"]),
        entra=entra,
    )


def azure_client(is_async: bool, key: str, deployment: Deployment) -> Any:
    """The ``AzureOpenAI`` (or async) client of one deployment: retries off, the key as
    ``api-key`` or an Entra token as a bearer token, and nothing the SDK would read from the
    environment (``OPENAI_ORG_ID``, ``AZURE_OPENAI_*``, ...) left in."""
    from scriptorium.llm.http_clients import sdk_http_client
    from scriptorium.llm.openai.sdk import scrubbed, sdk

    module = sdk()
    cls = module.AsyncAzureOpenAI if is_async else module.AzureOpenAI
    credential = {"azure_ad_token": key} if deployment.entra else {"api_key": key}
    try:
        client = cls(
            azure_endpoint=deployment.endpoint,
            azure_deployment=deployment.deployment,
            api_version=deployment.api_version,
            max_retries=0,
            http_client=sdk_http_client(module, is_async),
            **credential,
        )
    except ValueError as err:  # the class refusing what it was given (no secret in its text)
        raise LLMGenerateError(
            f"openai on azure: {err}", reason="config", provider=PROVIDER
        ) from err
    return scrubbed(client)


def priced_as(request: LLMRequest, reported: str | None) -> str | None:
    """The model an Azure answer is priced as: the one Azure reports it was served by, else
    ``options.base_model``, else None (no price: the deployment's name says nothing)."""
    if reported:
        return reported
    base = request.options.get("base_model")
    return base if isinstance(base, str) and base else None
