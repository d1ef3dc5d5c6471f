"""Claude through a cloud platform: Amazon Bedrock (``AnthropicBedrock``) and Google Vertex AI
(``AnthropicVertex``), chosen by a profile's ``options``:

    options: {platform: bedrock, region: us-east-1}                       # + aws_profile
    options: {platform: vertex, project: my-project, region: us-east5}   # + access_token_env

The request is the Anthropic provider's in every other way (body, strategies, caching, reasoning,
the reading of the answer, pricing); what differs is where it goes and as whom, and that lives
here: the options' rules (:func:`option_problems`), the :class:`~scriptorium.llm.registry.Route`
the registry reports (:func:`route`), the SDK client of a route (:class:`Platform`,
:func:`platform_client`), and how one body is sent on it (:func:`sending`, :func:`post`,
:func:`stream_args`; :func:`counts_tokens` says whether it can count).

Credentials are the platform's own chain, read by the SDK when a request is signed: AWS's
(environment, shared profile files, a role) for Bedrock, with ``aws_profile`` naming a shared
profile; Google's application default credentials for Vertex, or an access token the run reads
like a key from the variable ``access_token_env`` names (it then travels as the request's key,
redacted everywhere a key is, and google-auth is never consulted). A Bedrock profile names no key
variable; a Vertex profile none but ``access_token_env``.

The route itself (the URL path, where the model goes, the ``anthropic_version`` member) is the
SDK class's: the body goes through its ``post`` as JSON, and the platform class maps
``/v1/messages`` to Bedrock's ``/model/{id}/invoke`` (``invoke-with-response-stream``) or
Vertex's ``.../publishers/anthropic/models/{model}:rawPredict`` (``streamRawPredict``). Bedrock
signs each request's bytes (SigV4), so media go into the body before it is signed (never spliced
in after); Vertex's bearer token signs nothing, and media are spliced in as for the Anthropic API.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.adapter import key_of
from scriptorium.llm.anthropic.api import BASE_URL_ENV, KEY_ENV, MEDIA_LIMITS, PROVIDER
from scriptorium.llm.aws import AWS_SECRET_ENV
from scriptorium.llm.cloud import PlatformOptions
from scriptorium.llm.media.limits import MB, MediaLimits
from scriptorium.llm.media.wire import MediaWire
from scriptorium.llm.model import LLMRequest
from scriptorium.llm.registry import Route
from scriptorium.profile.model import variable_name_problem

__all__ = [
    "BEDROCK",
    "BEDROCK_BASE_URL_ENV",
    "BEDROCK_MEDIA_LIMITS",
    "OWN_API",
    "PLATFORMS",
    "VERTEX",
    "Platform",
    "counts_tokens",
    "credential_problem",
    "media_limits",
    "option_problems",
    "platform_client",
    "platform_of",
    "post",
    "route",
    "sending",
    "stream_args",
]

BEDROCK = "bedrock"
VERTEX = "vertex"
#: The platforms the anthropic provider can be reached through (besides its own API).
PLATFORMS = (BEDROCK, VERTEX)
#: The SDK's own base-URL variable for Bedrock, honoured when a profile names no endpoint (the
#: same form as a profile's endpoint: the root, no path).
BEDROCK_BASE_URL_ENV = "ANTHROPIC_BEDROCK_BASE_URL"

#: The options each platform takes (``platform`` itself aside); the first ones are required.
_REQUIRED = {BEDROCK: ("region",), VERTEX: ("project", "region")}
_OPTIONAL = {BEDROCK: ("aws_profile", "base_model"), VERTEX: ("access_token_env", "base_model")}
_PLATFORM_ONLY = ("region", "project", "aws_profile", "access_token_env")
_CLOUD = PlatformOptions(provider=PROVIDER, platforms=PLATFORMS, only=_PLATFORM_ONLY)

_REGION = re.compile(r"^[a-z][a-z0-9-]{1,39}$")
# Google project ids (and the older domain-scoped ``example.com:project``): no path characters.
_PROJECT = re.compile(r"^[a-z0-9][a-z0-9.:-]{0,99}$")
_NAME = re.compile(r"^[A-Za-z0-9._+=,@-]{1,128}$")

#: Bedrock's InvokeModel takes at most 20 MB of request body; images and PDFs as Anthropic's API.
BEDROCK_MEDIA_LIMITS = MediaLimits(
    provider="anthropic on bedrock",
    kinds=MEDIA_LIMITS.kinds,
    max_request_bytes=20 * MB,
    max_images=MEDIA_LIMITS.max_images,
    max_pdf_pages=MEDIA_LIMITS.max_pdf_pages,
    max_image_side=MEDIA_LIMITS.max_image_side,
)


def _text(options: Mapping[str, Any], name: str) -> str | None:
    value = options.get(name)
    return value if isinstance(value, str) and value.strip() else None


def option_problems(options: Mapping[str, Any], source: str | None = None) -> list[str]:
    """What is wrong with a profile's ``options`` as the anthropic provider reads them: an unknown
    platform, a required option missing, a value of the wrong form, a platform option without a
    platform (for ``check``, and refused at prepare)."""
    chosen = _CLOUD.choice_problems(options)
    if chosen is not None:
        return chosen
    platform = options["platform"]
    problems: list[str] = []
    for name in _REQUIRED[platform]:
        if _text(options, name) is None:
            problems.append(f"options.{name} is required with platform {platform}")
    taken = {*_REQUIRED[platform], *_OPTIONAL[platform]}
    for name in _PLATFORM_ONLY:
        if name in options and name not in taken:
            problems.append(f"options.{name} is not used with platform {platform}")
    region = _text(options, "region")
    if region is not None and not _REGION.fullmatch(region):
        problems.append(f"options.region {region[:40]!r} is not a region name")
    project = _text(options, "project")
    if project is not None and not _PROJECT.fullmatch(project):
        problems.append(f"options.project {project[:40]!r} is not a Google Cloud project id")
    for name in ("aws_profile", "base_model"):
        value = options.get(name)
        if value is not None and (not isinstance(value, str) or not _NAME.fullmatch(value)):
            problems.append(f"options.{name} must be a name")
    variable = options.get("access_token_env")
    if variable is not None:
        problem = variable_name_problem("options.access_token_env", variable)
        if problem is not None:
            problems.append(problem)
    return problems


#: The route of a profile of Anthropic's own API.
OWN_API = Route(needs_key=True, base_url_env=BASE_URL_ENV, key_envs=(KEY_ENV,))


def route(options: Mapping[str, Any], profile: str | None = None) -> Route:
    """How a profile with ``options`` reaches Claude (the registry's :class:`Route`);
    ``InvalidRequestError`` naming the first problem when the options cannot be used."""
    platform = _CLOUD.chosen_platform(options, option_problems, profile)
    if platform is None:
        return OWN_API
    if platform == BEDROCK:
        return Route(
            platform=BEDROCK,
            region=_text(options, "region"),
            base_url_env=BEDROCK_BASE_URL_ENV,
            no_key_env=_BEDROCK_SIGNS,
            secret_env=AWS_SECRET_ENV,
            libraries=(("boto3", "bedrock"),),
        )
    return Route(
        platform=VERTEX,
        libraries=(("google.auth", "vertex"),),
        region=_text(options, "region"),
        token_env=_text(options, "access_token_env"),
        no_key_env=(
            "platform vertex uses Google's default credentials, or an access token from the "
            "variable options.access_token_env names: name no api_key_env"
        ),
    )


_BEDROCK_SIGNS = (
    "platform bedrock signs requests with AWS credentials from the standard chain "
    "(environment, shared profile, role): name no api_key_env and pass no key "
    "(options.aws_profile chooses a shared profile)"
)


def media_limits(
    endpoint: str | None, options: Mapping[str, Any], profile: str | None = None
) -> MediaLimits:
    """The media rules of the route ``options`` choose (Bedrock's smaller request body),
    whatever the endpoint (the spec's ``media``)."""
    return BEDROCK_MEDIA_LIMITS if options.get("platform") == BEDROCK else MEDIA_LIMITS


@dataclass(frozen=True)
class Platform:
    """One cloud route's SDK client, as the client cache tells them apart: the platform, where
    its API is (``base_url``, as the SDK class takes it), and what its credentials come from
    (a shared AWS profile; a Vertex project). No credential is held here."""

    name: str
    region: str
    base_url: str
    project: str | None = None
    aws_profile: str | None = None

    def describe(self) -> str:
        """``bedrock us-east-1`` (for messages)."""
        return f"{self.name} {self.region}"


def _vertex_host(region: str) -> str:
    # Vertex's hosts: one global, two multi-region, one per region.
    if region == "global":
        return "https://aiplatform.googleapis.com"
    if region in ("us", "eu"):
        return f"https://aiplatform.{region}.rep.googleapis.com"
    return f"https://{region}-aiplatform.googleapis.com"


def platform_of(request: LLMRequest) -> Platform | None:
    """The platform ``request`` goes through (None: Anthropic's own API). ``LLMGenerateError``
    (``reason="config"``) when its options or credentials cannot be used: a request built by
    hand gets what prepare would have said."""
    name = _CLOUD.request_platform(request, option_problems, credential_problem)
    if name is None:
        return None
    options = request.options
    region = str(_text(options, "region"))
    endpoint = request.target.endpoint
    if name == BEDROCK:
        base_url = endpoint or f"https://bedrock-runtime.{region}.amazonaws.com"
        return Platform(BEDROCK, region, base_url, aws_profile=_text(options, "aws_profile"))
    # The Vertex SDK class takes its base URL with the API version; a profile's endpoint is the
    # root, as for the Anthropic API (where the SDK adds /v1 itself).
    base_url = (endpoint or _vertex_host(region)).rstrip("/") + "/v1"
    return Platform(VERTEX, region, base_url, project=_text(options, "project"))


def credential_problem(request: LLMRequest) -> str | None:
    """Why the request's credential cannot be used on its platform: Bedrock signs with the AWS
    chain and takes no key, not even a direct one (a key variable on either platform is the
    route's ``no_key_env``, refused where every key is read)."""
    if request.options.get("platform") == BEDROCK and key_of(request):
        return _BEDROCK_SIGNS
    return None


# --- the SDK clients ------------------------------------------------------------------------------


def platform_client(is_async: bool, key: str, platform: Platform) -> Any:
    """The SDK client of ``platform`` (retries off, nothing taken from the environment but the
    platform's own credential chain). ``key`` is a Vertex access token, when the run has one."""
    from scriptorium.llm.anthropic.sdk import sdk
    from scriptorium.llm.http_clients import sdk_http_client

    module = sdk()
    if platform.name == BEDROCK:
        cls = module.AsyncAnthropicBedrock if is_async else module.AnthropicBedrock
        client = _built(
            cls,
            platform,
            aws_region=platform.region,
            aws_profile=platform.aws_profile,
            base_url=platform.base_url,
            max_retries=0,
            http_client=sdk_http_client(module, is_async),
        )
    else:
        cls = module.AsyncAnthropicVertex if is_async else module.AnthropicVertex
        client = _built(
            cls,
            platform,
            region=platform.region,
            project_id=platform.project,
            access_token=key or None,
            base_url=platform.base_url,
            max_retries=0,
            http_client=sdk_http_client(module, is_async),
        )
    # As for the Anthropic API's client: ANTHROPIC_CUSTOM_HEADERS from the environment would be
    # merged into every request; a profile alone decides what is sent.
    if hasattr(client, "_custom_headers"):
        client._custom_headers = {}
    return client


def _built(cls: Any, platform: Platform, **kwargs: Any) -> Any:
    try:
        return cls(**kwargs)
    except ImportError as err:  # boto3 / google-auth, imported by the class on first use
        raise _missing(platform, err) from err
    except ValueError as err:  # the class refusing what it was given (its message has no secret)
        raise LLMGenerateError(
            f"anthropic on {platform.describe()}: {err}", reason="config", provider=PROVIDER
        ) from err


def _missing(platform: Platform, err: ImportError) -> LLMGenerateError:
    from scriptorium._version import install_hint

    return LLMGenerateError(
        f"anthropic on {platform.name} needs the SDK's {platform.name} extra "
        f"({type(err).__name__}: {err}): " + install_hint(platform.name),
        reason="provider_unavailable",
        provider=PROVIDER,
    )


# --- sending --------------------------------------------------------------------------------------


def sending(
    platform: Platform, wire: MediaWire, client: Any, body: dict[str, Any]
) -> contextlib.AbstractContextManager[dict[str, Any]]:
    """Around one send on ``platform``: the body to send. With media, Bedrock gets the real
    base64 in it (SigV4 signs the body's bytes before any request hook could splice); Vertex
    splices as the Anthropic API does."""
    if platform.name == BEDROCK and wire:
        return contextlib.nullcontext(wire.inline(body))
    return wire.sending(client, body)


def post(client: Any, path: str, body: dict[str, Any], timeout_s: float, **extra: Any) -> Any:
    """``body`` posted as JSON to the Anthropic API ``path`` through a platform's SDK class,
    which maps it to its own route (``/v1/messages`` to Bedrock's invoke or Vertex's
    rawPredict, with their ``stream`` variants), adds its version member and authenticates. The
    HTTP response, unparsed (``cast_to`` and ``stream`` as the SDK's ``post`` takes them); error
    statuses raise as the SDK raises them."""
    from scriptorium.llm.anthropic.sdk import http_response_class

    extra.setdefault("cast_to", http_response_class())
    return client.post(path, body=body, options={"timeout": timeout_s}, **extra)


def stream_args(stream_cls: Any) -> dict[str, Any]:
    """What :func:`post` takes to open a stream: the SDK's message type and its stream class
    over the raw events (only its ``response`` is read)."""
    from scriptorium.llm.anthropic.sdk import sdk

    types = sdk().types
    return {
        "cast_to": types.Message,
        "stream": True,
        "stream_cls": stream_cls[types.RawMessageStreamEvent],
    }


def counts_tokens(platform: Platform) -> bool:
    """Whether the platform's SDK class has a token-counting route (Vertex's
    ``count-tokens:rawPredict``; Bedrock's class refuses counting)."""
    return platform.name == VERTEX
