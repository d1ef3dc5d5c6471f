"""What scriptorium knows about Amazon Bedrock's Converse API, as data: names, the dated model
tables (which models take tools, JSON-schema output, thinking), prices, stop reasons, and how a
profile says where it runs. No SDK: the spec and the adapter read it from here."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from scriptorium.llm.aws import AWS_SECRET_ENV
from scriptorium.llm.media.limits import MB, MediaLimits
from scriptorium.llm.model import ModelPrice
from scriptorium.llm.pricing import usd_price
from scriptorium.llm.registry import Route

__all__ = [
    "IGNORED_SETTINGS",
    "MEDIA_LIMITS",
    "PRICES",
    "PRICES_DATE",
    "PROVIDER",
    "STOP_REASONS",
    "TABLE_DATE",
    "base_model",
    "option_problems",
    "route",
    "takes_thinking",
    "takes_tools",
]

PROVIDER = "bedrock"

#: ``top_k`` has no place in ``inferenceConfig`` (a model's own field would need its own name).
IGNORED_SETTINGS: tuple[str, ...] = ("top_k",)

#: Converse's limits on what one request may hold: 20 images (3.75 MB each), 5 documents
#: (4.5 MB each); a request of some 25 MB in all.
MEDIA_LIMITS = MediaLimits(
    provider=PROVIDER,
    kinds=frozenset({"image", "pdf"}),
    max_request_bytes=25 * MB,
    max_images=20,
    max_pdf_pages=None,
)

#: When the model tables below were last checked against Bedrock's documentation.
TABLE_DATE = "2026-11"

# Model families (by the base model id, without a region's inference-profile prefix) that take
# tool use through Converse, so the ``tool`` strategy can force a tool whose input schema is the
# output schema. Others get the schema in the system text (``prompt``).
_TOOL_FAMILIES = (
    "anthropic.claude-",
    "amazon.nova-",
    "meta.llama3-1-",
    "meta.llama3-2-11b",
    "meta.llama3-2-90b",
    "meta.llama3-3-",
    "meta.llama4-",
    "mistral.mistral-large-",
    "mistral.pixtral-large-",
    "cohere.command-r",
    "ai21.jamba-",
    "writer.palmyra-",
    "deepseek.",
    "openai.gpt-oss-",
    "qwen.",
)
# Models that think when asked through ``additionalModelRequestFields.thinking`` (a budget).
_THINKING_FAMILIES = (
    "anthropic.claude-3-7-sonnet",
    "anthropic.claude-sonnet-4",
    "anthropic.claude-opus-4",
    "anthropic.claude-haiku-4",
)
_REGION_PREFIX = re.compile(r"^(?:us|eu|apac|us-gov|jp|au|ca|global)\.")

#: When the prices were read from Bedrock's pricing page (on-demand, us-east-1, USD per million
#: tokens: input, output, cache write, cache read; a model without prompt caching has its input
#: price in both cache columns, and Nova writes its cache at the input price).
PRICES_DATE = "2026-11"
PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {
        "amazon.nova-micro-v1:0": usd_price("0.035", "0.14", "0.035", "0.00875"),
        "amazon.nova-lite-v1:0": usd_price("0.06", "0.24", "0.06", "0.015"),
        "amazon.nova-pro-v1:0": usd_price("0.80", "3.20", "0.80", "0.20"),
        "amazon.nova-premier-v1:0": usd_price("2.50", "12.50", "2.50", "0.625"),
        "meta.llama3-3-70b-instruct-v1:0": usd_price("0.72", "0.72", "0.72", "0.72"),
        "meta.llama3-1-8b-instruct-v1:0": usd_price("0.22", "0.22", "0.22", "0.22"),
        "meta.llama3-1-70b-instruct-v1:0": usd_price("0.72", "0.72", "0.72", "0.72"),
        "mistral.mistral-large-2407-v1:0": usd_price("2.00", "6.00", "2.00", "2.00"),
        "mistral.mistral-small-2402-v1:0": usd_price("1.00", "3.00", "1.00", "1.00"),
        "anthropic.claude-sonnet-4-5-20250929-v1:0": usd_price("3.00", "15.00", "3.75", "0.30"),
        "anthropic.claude-haiku-4-5-20251001-v1:0": usd_price("1.00", "5.00", "1.25", "0.10"),
    }
)

#: Converse's ``stopReason`` -> scriptorium's finish reason. A value not listed is kept as
#: Bedrock's own string (and is never a valid answer by itself).
STOP_REASONS: Mapping[str, str] = MappingProxyType(
    {
        "end_turn": "stop",
        "stop_sequence": "stop",
        "max_tokens": "length",
        "model_context_window_exceeded": "length",
        "tool_use": "tool_use",
        "guardrail_intervened": "refusal",
        "content_filtered": "refusal",
    }
)


def base_model(model: str) -> str:
    """The base model id of ``model``: a cross-region inference profile's prefix (``us.``,
    ``eu.``, ``global.``, ...) removed; an ARN's last part."""
    if model.startswith("arn:"):
        model = model.rsplit("/", 1)[-1]
    return _REGION_PREFIX.sub("", model)


def takes_tools(model: str) -> bool:
    """Whether ``model`` takes tool use through Converse (the table of :data:`TABLE_DATE`)."""
    return base_model(model).startswith(_TOOL_FAMILIES)


def takes_thinking(model: str) -> bool:
    """Whether ``model`` thinks with a budget given in ``additionalModelRequestFields``."""
    return base_model(model).startswith(_THINKING_FAMILIES)


_OPTIONS = frozenset({"region", "aws_profile"})
_REGION = re.compile(r"^[a-z]{2}(?:-[a-z]+)+-\d$")


def route(options: Mapping[str, Any], profile: str | None = None) -> Route:
    """How a bedrock profile reaches Bedrock: AWS credentials from the standard chain (signed by
    botocore), never a key."""
    region = options.get("region")
    return Route(
        region=region if isinstance(region, str) else None,
        needs_key=False,
        secret_env=AWS_SECRET_ENV,
        no_key_env=(
            "provider bedrock signs requests with AWS credentials from the standard chain "
            "(environment, shared profiles, an instance role; options.aws_profile chooses a "
            "shared profile): name no api_key_env"
        ),
    )


def option_problems(options: Mapping[str, Any], source: str | None = None) -> Iterable[str]:
    """What is wrong with a bedrock profile's ``options`` (for ``check``)."""
    for name in sorted(set(options) - _OPTIONS):
        yield f"options.{name} is not a bedrock option (known: {', '.join(sorted(_OPTIONS))})"
    region = options.get("region")
    if region is not None and not (isinstance(region, str) and _REGION.fullmatch(region)):
        yield f"options.region {str(region)[:40]!r} is not a region name (such as us-east-1)"
    profile = options.get("aws_profile")
    if profile is not None and not (isinstance(profile, str) and profile.strip()):
        yield "options.aws_profile must be a non-empty string"
