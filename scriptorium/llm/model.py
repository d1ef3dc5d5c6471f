"""What crosses the LLM boundary: requests, responses, usage and the target a profile names; how
a failed attempt is classified (:class:`Failure`, :class:`RetryInfo`); a model's prices."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SecretStr

from scriptorium.errors import APIKeyEnvMissingError
from scriptorium.profile.model import ExecutionSettings, variable_name_problem
from scriptorium.prompt.model import CachePoint, Message

__all__ = [
    "APIKey",
    "Failure",
    "LLMRequest",
    "LLMResponse",
    "ModelPrice",
    "RedactedSecretStr",
    "RetryInfo",
    "StructuredOutput",
    "Target",
    "TokenCount",
    "Uncounted",
    "Usage",
    "given_key",
    "is_none",
    "key_from_env",
]


@dataclass(frozen=True)
class Failure:
    """The classification of one failed attempt. ``message`` is safe to show (no key values)."""

    reason: str
    retryable: bool
    http_status: int | None = None
    retry_after_s: float | None = None
    message: str = ""


@dataclass(frozen=True)
class RetryInfo:
    """What ``on_retry`` observers receive before each backoff sleep."""

    attempt: int
    delay_s: float
    failure: Failure
    elapsed_s: float


@dataclass(frozen=True)
class ModelPrice:
    """Integer micro-USD per million tokens for each token class. ``cache_write`` is the 5-minute
    cache write; ``cache_write_1h`` the 1-hour one (None: twice the input price, Anthropic's rate)."""

    input: int
    output: int
    cache_write: int
    cache_read: int
    cache_write_1h: int | None = None


class RedactedSecretStr(SecretStr):
    """A ``SecretStr`` that also refuses to travel in a pickle: it unpickles empty.

    ``repr``, ``str`` and JSON dumps are already masked by pydantic; pickling is the remaining way a
    key could be written somewhere by accident (a result cache, a multiprocessing queue).
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return (RedactedSecretStr, ("",))


def is_none(value: Any) -> bool:
    """Whether ``value`` is None: the ``exclude_if`` of optional fields added after results had
    a published shape (left out of dumps when unset, so older readers and files see no change)."""
    return value is None


def _is_zero(value: int) -> bool:
    return value == 0


def _unwrap_secret(value: Any) -> Any:
    return value.get_secret_value() if isinstance(value, SecretStr) else value


#: The field type of every key: accepts ``str`` or any ``SecretStr``, keeps a :class:`RedactedSecretStr`.
APIKey = Annotated[RedactedSecretStr, BeforeValidator(_unwrap_secret)]


def given_key(value: SecretStr | str | None) -> str | None:
    """The key ``value`` gives: None when it is absent, empty or blank. A blank key is no key,
    wherever it comes from (a request, a variable, a supervisor's environment), so no caller can
    tell "no key" and "an empty key" apart and fall back to another key by accident. Any other
    value is a key as given, however short: local servers document ``EMPTY``, ``none`` or
    ``ollama`` as the key they take."""
    text = value.get_secret_value() if isinstance(value, SecretStr) else value
    if text is None or not text.strip():
        return None
    return text


def key_from_env(env: Mapping[str, str], name: str, *, reader: str, **fields: Any) -> str:
    """The key in variable ``name`` of ``env``. ``APIKeyEnvMissingError`` (``env_var`` set,
    ``fields`` added, the value never shown) when it is unset or blank;
    ``reader`` says who reads it, for the message (``profile 'p'``)."""
    if variable_name_problem("the variable", name) is not None:
        # Not a variable's name (a pasted key, most likely): never shown, never looked up.
        raise APIKeyEnvMissingError(
            f"{reader} names its key variable with something that is not a variable name "
            "(a pasted key or token?): name the environment variable that holds it",
            **fields,
        )
    value = given_key(env.get(name))
    if value is not None:
        return value
    raise APIKeyEnvMissingError(
        f"environment variable {name} is unset or empty ({reader} reads its key from it)",
        env_var=name,
        **fields,
    )


class Target(BaseModel):
    """Where a request goes. ``explicit`` lists which fields a profile or override stated."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    provider: str
    model: str = ""
    endpoint: str | None = None
    api_key_env: str | None = None
    explicit: tuple[str, ...] = ()
    #: Where ``endpoint`` came from: the profile, an override, or (``env``) the provider SDK's
    #: base-URL variable (``ANTHROPIC_BASE_URL``, ...) for a profile that names none.
    endpoint_source: Literal["profile", "override", "env"] | None = None
    #: The cloud platform the provider is reached through (``bedrock``, ``vertex``, ``azure``),
    #: from the profile's ``options``; None for the provider's own API.
    platform: str | None = None
    #: The platform's region, where it has one.
    region: str | None = None
    #: Why the key came from ``api_key_env``: the profile named it (``profile``), or it is the
    #: provider's conventional variable, read because the profile names none (``default``).
    #: None: no variable was read (a key given with the request, or none sent).
    api_key_source: Literal["profile", "default"] | None = Field(default=None, exclude_if=is_none)

    def hash_form(self) -> dict[str, Any]:
        """The target as it counts for ``request_hash``: which provider and model answer. Neither
        the endpoint (a proxy or a recording server in between changes no answer), the platform
        and region (the same request to the same model by another route is the same request) nor
        how the key is found."""
        return {"provider": self.provider, "model": self.model}


class StructuredOutput(BaseModel):
    """How the provider is asked for structured output."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", populate_by_name=True)

    schema_: dict[str, Any] | bool | None = Field(default=None, alias="schema")
    name: str = "output"
    strategy: Literal["auto", "native", "tool", "prompt"] = "auto"
    #: ``json`` asks for any JSON value; ``json_schema`` for one matching ``schema``.
    format: Literal["json", "json_schema"] = "json_schema"


class Usage(BaseModel):
    """Token counts and cost. ``cost_micro`` is integer micro-USD; ``llm_calls`` counts HTTP requests.

    ``output_tokens`` counts every generated token, reasoning included; ``reasoning_tokens`` says
    how many of them were reasoning (0 when the provider does not say), so pricing never counts a
    reasoning token twice (see :mod:`scriptorium.llm.pricing`).
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_creation_input_tokens: int = Field(default=0, ge=0)
    cache_read_input_tokens: int = Field(default=0, ge=0)
    #: How many of ``cache_creation_input_tokens`` were written to the 1-hour cache (the rest went
    #: to the 5-minute one); priced apart.
    cache_write_1h_input_tokens: int = Field(default=0, ge=0)
    cost_micro: int = Field(default=0, ge=0)
    llm_calls: int = Field(default=0, ge=0)
    #: How many of ``output_tokens`` the model spent reasoning, as the provider reports it (left
    #: out of dumps when 0, so results of runs that do not reason read as they always did).
    reasoning_tokens: int = Field(default=0, ge=0, exclude_if=_is_zero)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens
            + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cache_write_1h_input_tokens=self.cache_write_1h_input_tokens
            + other.cache_write_1h_input_tokens,
            cost_micro=self.cost_micro + other.cost_micro,
            llm_calls=self.llm_calls + other.llm_calls,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


class CacheDirectives(BaseModel):
    """How a request asks the provider to cache its prefix (the prompt's ``cache`` front matter
    and the breakpoints its rendering found). Changes no answer, so it is in no hash."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["static", "auto", "explicit"]
    ttl: Literal["5m", "1h"] = "5m"
    #: Breakpoints in prompt order (``static`` / ``explicit``), already at most four, longest TTL first.
    points: tuple[CachePoint, ...] = ()
    #: A stable key for providers that route by one (OpenAI's ``prompt_cache_key``): the
    #: definition hash, so every run of the prompt shares it.
    key: str | None = None


class LLMRequest(BaseModel):
    """One generation request. ``api_key`` is the only place a key value lives."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    target: Target
    api_key: APIKey | None = None
    system: str | None = None
    messages: tuple[Message, ...] = ()
    settings: ExecutionSettings = ExecutionSettings()
    structured_output: StructuredOutput | None = None
    session_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: Prices from the profile (USD per million tokens), overriding the built-in table.
    pricing: dict[str, float | None] | None = None
    #: The profile's provider-specific ``options`` (``fake`` responses, ``replay`` cassette). Never
    #: secret: profile parsing refuses secret-looking values. Not part of ``hash_form``.
    options: dict[str, Any] = Field(default_factory=dict)
    #: The profile file the request's target came from, for paths in ``options`` relative to it.
    #: Not part of ``hash_form``.
    profile_source: str | None = None
    #: Prompt caching directives; None when the prompt's cache mode is off. Not part of
    #: ``hash_form``: turning caching on changes no answer.
    cache: CacheDirectives | None = None
    #: The prompt definition the request was rendered from (None for a raw request). Informational
    #: (fakes name it when refusing a call); never sent, not part of ``hash_form``.
    prompt_id: str | None = None
    #: The bytes of the media parts in ``messages``, by their ``sha256``: what an adapter encodes
    #: into the request. Never dumped, shown in a repr or hashed (the parts' digests are).
    media: dict[str, bytes] = Field(default_factory=dict, exclude=True, repr=False)
    #: The profile the request was prepared on (None for a raw request). Informational (test
    #: doubles script answers per profile by it); never sent, not part of ``hash_form``.
    profile: str | None = None
    #: The wall-clock seconds this request may still take, when less than ``settings.timeout_s``
    #: (a fallback chain sharing one budget hands each later profile what is left). Bounds the
    #: retry loop like ``timeout_s``; not part of ``hash_form``: it changes no answer.
    budget_s: float | None = Field(default=None, gt=0.0)

    def hash_form(self) -> dict[str, Any]:
        """Everything that reaches the provider except the key (``request_hash``)."""
        return {
            "system": self.system,
            "messages": [m.hash_form() for m in self.messages],
            "target": self.target.hash_form(),
            "settings": self.settings.hash_form(),
            "structured_output": None
            if self.structured_output is None
            else self.structured_output.model_dump(mode="json", by_alias=True),
        }


class LLMResponse(BaseModel):
    """What a client returns. Every field but ``text`` has a default, so fakes stay short."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    text: str = ""
    #: The reasoning text the provider returned (its summaries included), apart from ``text``;
    #: None (and left out of dumps) when it returned none. Redacted or encrypted reasoning is
    #: never kept here.
    reasoning: str | None = Field(default=None, exclude_if=is_none)
    model: str = ""
    #: ``stop``, ``length``, ``refusal``, ``tool_use``, or the provider's own value.
    finish_reason: str = "stop"
    usage: Usage = Usage()
    #: HTTP requests made for this response, transport retries included.
    attempts: int = Field(default=1, ge=0)
    latency_ms: float = Field(default=0.0, ge=0)
    #: Request id, strategy used, pricing notes.
    metadata: dict[str, Any] = Field(default_factory=dict)


class TokenCount(BaseModel):
    """The input tokens of a prepared request: counted by the provider, or ``estimated`` locally
    (about four characters a token) where it has no counting endpoint, or where its endpoint
    could not count this time (``reason`` says why: a gateway without the counting route)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_tokens: int = Field(ge=0)
    estimated: bool
    provider: str
    model: str
    reason: str | None = None


@dataclass(frozen=True)
class Uncounted:
    """What a token counter answers when its endpoint cannot count a request (a gateway without
    the counting route answers 404, or 500): why, for the estimate that stands in."""

    reason: str
