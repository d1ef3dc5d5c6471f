"""What scriptorium knows about the Gemini API and Vertex AI, as data: names, where they are, what
one request may hold, what each model costs (with the long-context tier), and how a profile says
it wants Vertex AI. No SDK: the spec, the adapter and the batch adapter read it from here."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from scriptorium.llm.batches.port import BatchLimits
from scriptorium.llm.media.limits import MB, MediaLimits
from scriptorium.llm.model import ModelPrice
from scriptorium.llm.pricing import usd_price
from scriptorium.llm.reasoning import find_model
from scriptorium.llm.registry import Route
from scriptorium.profile.model import variable_name_problem

__all__ = [
    "BASE_URL_ENV",
    "BATCH_LIMITS",
    "DEFAULT_BASE_URL",
    "IGNORED_SETTINGS",
    "INLINE_BATCH_BYTES",
    "KEY_ENV",
    "LONG_CONTEXT",
    "MEDIA_LIMITS",
    "OWN_API",
    "PRICES",
    "PROVIDER",
    "VERTEX",
    "Place",
    "is_vertex",
    "option_problems",
    "place_of",
    "price_of",
    "route",
]

PROVIDER = "gemini"
#: The Gemini API's own host (the SDK adds the API version and the model's path).
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
#: The key variable a Gemini API profile usually names, and the SDK's own base-URL variable.
KEY_ENV = "GEMINI_API_KEY"
#: The variable the SDK reads when ``GEMINI_API_KEY`` is unset.
GOOGLE_KEY_ENV = "GOOGLE_API_KEY"
BASE_URL_ENV = "GOOGLE_GEMINI_BASE_URL"
#: The platform name a Vertex AI profile's target shows (as for Claude on Vertex AI).
VERTEX = "vertex"

#: Every setting has a place in ``generationConfig``: none is left out.
IGNORED_SETTINGS: tuple[str, ...] = ()

#: 20 MB for a whole request with its inline data; 3,600 images; 1,000 PDF pages.
MEDIA_LIMITS = MediaLimits(
    provider=PROVIDER,
    kinds=frozenset({"image", "pdf"}),
    max_request_bytes=20 * MB,
    max_images=3600,
    max_pdf_pages=1000,
)

#: Batch Mode: requests given inline while the batch request stays under 20 MB; above that the
#: rows go as an uploaded JSONL file (up to 2 GB).
INLINE_BATCH_BYTES = 20 * MB
BATCH_LIMITS = BatchLimits(100_000, 2_000 * MB)

#: Model name -> price at and below the long-context threshold (see ``scriptorium.llm.pricing``
#: for the table's date and source). Implicit caching writes at the input price; cache reads are
#: the cached rate Google lists. Cache storage (explicit caches, by the hour) is not a token cost.
PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {
        "gemini-3-pro-preview": usd_price("2", "12", "2", "0.20"),
        "gemini-3-flash-preview": usd_price("0.50", "3", "0.50", "0.05"),
        "gemini-2.5-pro": usd_price("1.25", "10", "1.25", "0.125"),
        "gemini-2.5-flash": usd_price("0.30", "2.50", "0.30", "0.03"),
        "gemini-2.5-flash-lite": usd_price("0.10", "0.40", "0.10", "0.01"),
        "gemini-2.0-flash": usd_price("0.10", "0.40", "0.10", "0.025"),
        "gemini-2.0-flash-lite": usd_price("0.075", "0.30", "0.075", "0.075"),
    }
)

#: Models billed at a higher rate when a prompt is longer than a threshold: name -> (prompt
#: tokens above which the second price applies, that price). The whole call takes that rate.
LONG_CONTEXT: Mapping[str, tuple[int, ModelPrice]] = MappingProxyType(
    {
        "gemini-3-pro-preview": (200_000, usd_price("4", "18", "4", "0.40")),
        "gemini-2.5-pro": (200_000, usd_price("2.50", "15", "2.50", "0.25")),
    }
)


def price_of(model: str, prompt_tokens: int) -> tuple[str, ModelPrice] | None:
    """The table entry pricing one call of ``model`` whose prompt held ``prompt_tokens`` (cached
    ones included): the long-context price above the model's threshold. The model is looked up
    as the reasoning table is (a snapshot or version suffix names the listed model)."""
    found = find_model(model, PRICES)
    if found is None:
        return None
    name, price = found
    tier = LONG_CONTEXT.get(name)
    if tier is not None and prompt_tokens > tier[0]:
        return name, tier[1]
    return name, price


@dataclass(frozen=True)
class Place:
    """Where a request goes: the Gemini API at ``base_url`` (None: Google's), or Vertex AI in
    ``project`` and ``location``. One SDK client is kept per place and credential (the credential
    is the request's key: an API key, or a Vertex AI access token)."""

    base_url: str | None = None
    vertexai: bool = False
    project: str | None = None
    location: str | None = None

    def slot(self) -> str:
        """The place as one string (the SDK client cache keys by it)."""
        return json.dumps([self.base_url, self.vertexai, self.project, self.location])

    @staticmethod
    def from_slot(slot: str) -> Place:
        """The place :meth:`slot` wrote."""
        base_url, vertexai, project, location = json.loads(slot)
        return Place(base_url, bool(vertexai), project, location)


def _text_option(options: Mapping[str, Any], name: str) -> str | None:
    value = options.get(name)
    return value if isinstance(value, str) and value.strip() else None


def is_vertex(options: Mapping[str, Any]) -> bool:
    """Whether a profile's ``options`` choose Vertex AI (``vertexai: true``; anything else is
    the Gemini API, and ``check`` says what is wrong with a value that is not a boolean)."""
    return options.get("vertexai") is True


def place_of(endpoint: str | None, options: Mapping[str, Any]) -> Place:
    """The place a profile's endpoint and ``options`` name (see :class:`Place`)."""
    if is_vertex(options):
        return Place(
            base_url=endpoint,
            vertexai=True,
            project=_text_option(options, "project"),
            location=_text_option(options, "location") or "global",
        )
    return Place(base_url=endpoint)


#: The route of a Gemini API profile: a key, and the SDK's base-URL variable.
OWN_API = Route(needs_key=True, base_url_env=BASE_URL_ENV, key_envs=(KEY_ENV, GOOGLE_KEY_ENV))


def route(options: Mapping[str, Any], profile: str | None = None) -> Route:
    """How a profile with ``options`` reaches Gemini (the registry's
    :class:`~scriptorium.llm.registry.Route`): the Gemini API needs a key; Vertex AI takes
    Google's default credentials, or an access token read like a key from the variable
    ``options.access_token_env`` names. Options that cannot be used are said by ``check`` and,
    at the call, by the adapter."""
    if not is_vertex(options):
        return OWN_API
    return Route(
        platform=VERTEX,
        region=place_of(None, options).location,
        needs_key=False,
        token_env=_text_option(options, "access_token_env"),
        no_key_env=(
            "Vertex AI uses Google's default credentials, or an access token from the variable "
            "options.access_token_env names: name no api_key_env"
        ),
    )


_OPTIONS = frozenset({"vertexai", "project", "location", "access_token_env"})


def option_problems(options: Mapping[str, Any], source: str | None = None) -> Iterable[str]:
    """What is wrong with a gemini profile's ``options`` (for ``check``)."""
    for name in sorted(set(options) - _OPTIONS):
        yield f"options.{name} is not a gemini option (known: {', '.join(sorted(_OPTIONS))})"
    vertex = options.get("vertexai")
    if vertex is not None and not isinstance(vertex, bool):
        yield "options.vertexai must be true or false"
    for name in ("project", "location"):
        value = options.get(name)
        if value is not None and not (isinstance(value, str) and value.strip()):
            yield f"options.{name} must be a non-empty string"
    variable = options.get("access_token_env")
    if variable is not None:
        problem = variable_name_problem("options.access_token_env", variable)
        if problem is not None:
            yield problem
    if vertex is True and _text_option(options, "project") is None:
        yield "options.vertexai needs options.project (the Google Cloud project)"
    if vertex is not True and any(n in options for n in ("project", "location")):
        yield "options.project and options.location are for Vertex AI (set options.vertexai: true)"
