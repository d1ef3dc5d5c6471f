"""Profiles: where a prompt runs (provider, model, endpoint, key variable) and with which settings."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from scriptorium.redaction import looks_like_secret

__all__ = [
    "DEFAULT_FALLBACK_ON",
    "DEFAULT_SETTINGS",
    "ENV_VAR_PATTERN",
    "FALLBACK_REASONS",
    "NEVER_FALL_BACK_ON",
    "PROFILE_NAME_PATTERN",
    "REASONING_LEVELS",
    "ExecutionSettings",
    "Pricing",
    "Profile",
    "RateLimits",
    "Reasoning",
    "ReasoningLevel",
    "SettingsPatch",
    "endpoint_origin",
    "is_insecure_endpoint",
    "is_private_endpoint",
    "is_valid_profile_name",
    "validate_endpoint",
    "variable_name_problem",
]

ENV_VAR_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
PROFILE_NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def _show(value: object) -> str:
    """``value`` quoted for a message, cut short (secret-looking values never get this far: the
    parser refuses them first)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def is_valid_profile_name(name: object) -> bool:
    """Whether ``name`` is a well-formed profile name (checked before any path is built from it)."""
    return isinstance(name, str) and PROFILE_NAME_PATTERN.fullmatch(name) is not None


def variable_name_problem(field: str, value: object) -> str | None:
    """Why ``value``, given as ``field`` (``api_key_env``, ``options.access_token_env``, ...), is
    not the name of an environment variable holding a secret; None when it is one. The value is
    never quoted: a pasted key or token is exactly what this catches."""
    if isinstance(value, str) and looks_like_secret(value):
        return f"{field} must name a variable; it looks like a pasted key"
    if not isinstance(value, str) or not ENV_VAR_PATTERN.fullmatch(value):
        return (
            f"{field} must name an environment variable (letters, digits and _; the secret "
            "itself never goes in a profile)"
        )
    return None


_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def _is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def endpoint_origin(url: str) -> str:
    """Where ``url`` goes, safe to show: scheme, host and port (the scheme's default when none
    is given); never a path, query, fragment or user info (where keys may hide)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    port = port or {"https": 443, "http": 80}.get(parts.scheme)
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def is_private_endpoint(url: str) -> bool:
    """Whether ``url``'s host is this machine or a private network (a loopback name or address,
    an RFC 1918 / unique-local / link-local address, or a ``.local``/``.internal``/``.lan``
    name): where a local model server may take no key. No name is resolved."""
    host = (urlsplit(url).hostname or "").lower()
    if not host:
        return False
    if _is_loopback(host) or host.endswith((".local", ".internal", ".lan", ".home.arpa")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_private or address.is_link_local


def validate_endpoint(url: str, *, allow_insecure_http: bool = False) -> str:
    """Check an endpoint URL: https anywhere, http only for loopback hosts (or, with
    ``allow_insecure_http``, any host: a gateway on a private network); no credentials in it."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("endpoint must be an http(s) URL with a host")
    if parts.username or parts.password:
        raise ValueError("endpoint must not carry credentials")
    if parts.scheme == "http" and not allow_insecure_http and not _is_loopback(parts.hostname):
        raise ValueError(
            "endpoint must use https unless the host is loopback (for a gateway on a private "
            "network, set allow_insecure_http: true in the profile)"
        )
    return url


def is_insecure_endpoint(url: str) -> bool:
    """Whether ``url`` is plain http to a host that is not loopback (keys and prompts travel in
    the clear): allowed only by a profile's ``allow_insecure_http``."""
    parts = urlsplit(url)
    return parts.scheme == "http" and not _is_loopback(parts.hostname or "")


#: How much a model thinks before it answers, from none to the most it can; each provider's spec
#: maps a level to what its models take (an effort, a token budget, a thinking level).
ReasoningLevel = Literal["off", "low", "medium", "high", "xhigh", "max"]
#: The levels in rising order.
REASONING_LEVELS: tuple[ReasoningLevel, ...] = ("off", "low", "medium", "high", "xhigh", "max")


def _yaml_off(value: Any) -> Any:
    # YAML 1.1 reads an unquoted `off` as false: it means the level, as it does for `cache: off`.
    return "off" if value is False else value


#: A reasoning setting: one of :data:`REASONING_LEVELS` (``false`` read as ``off``).
Reasoning = Annotated[ReasoningLevel | None, BeforeValidator(_yaml_off)]
#: The reasoning settings: in a request's hash only when given, so every request written before
#: they existed keeps its hash (cassettes and batch state files keep matching).
_UNSET_UNHASHED = ("reasoning", "reasoning_budget_tokens")


class ExecutionSettings(BaseModel):
    """The effective generation settings of a run, each bounded.

    ``reasoning`` (absent: the provider's default) and ``reasoning_budget_tokens`` (for models
    that take a token budget) say how much the model thinks; each provider maps them per model.
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    max_tokens: int = Field(default=1024, ge=1, le=1_000_000)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    top_k: int | None = Field(default=None, ge=0, le=100_000)
    stop_sequences: tuple[str, ...] = Field(default=(), max_length=16)
    timeout_s: float = Field(default=60.0, gt=0.0, le=3600.0)
    max_retries: int = Field(default=2, ge=0, le=10)
    reasoning: Reasoning = None
    # Bounded loosely: each provider checks what its models take (Anthropic at least 1024).
    reasoning_budget_tokens: int | None = Field(default=None, ge=0, le=1_000_000)

    def hash_form(self) -> dict[str, Any]:
        """The settings as they count for ``request_hash``: every field, except a reasoning
        setting that was not given (so requests from before those settings hash as they did)."""
        data = self.model_dump(mode="json")
        for name in _UNSET_UNHASHED:
            if data[name] is None:
                del data[name]
        return data


DEFAULT_SETTINGS = ExecutionSettings()


class SettingsPatch(BaseModel):
    """Settings as a profile states them: every field optional, ``None`` meaning "not given"."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    max_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    top_k: int | None = Field(default=None, ge=0, le=100_000)
    stop_sequences: tuple[str, ...] | None = Field(default=None, max_length=16)
    timeout_s: float | None = Field(default=None, gt=0.0, le=3600.0)
    max_retries: int | None = Field(default=None, ge=0, le=10)
    reasoning: Reasoning = None
    # Bounded loosely: each provider checks what its models take (Anthropic at least 1024).
    reasoning_budget_tokens: int | None = Field(default=None, ge=0, le=1_000_000)

    def given(self) -> dict[str, Any]:
        """The fields that were stated."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class Pricing(BaseModel):
    """Prices in USD per million tokens, per token class. ``input`` and ``output`` are required;
    a cache price left out (or null) is derived from ``input``: 5-minute cache write 1.25x,
    1-hour cache write (``cache_write_1h``) 2x, cache read 0.1x."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    input: float = Field(ge=0, allow_inf_nan=False)
    output: float = Field(ge=0, allow_inf_nan=False)
    cache_write: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    cache_read: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    cache_write_1h: float | None = Field(default=None, ge=0, allow_inf_nan=False)


class RateLimits(BaseModel):
    """The provider's budgets for this profile, per minute; every field optional (``None`` = no
    limit of that kind). Batch executors share one limiter holding them across every worker."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    requests_per_minute: int | None = Field(default=None, ge=1, le=100_000_000)
    input_tokens_per_minute: int | None = Field(default=None, ge=1, le=10_000_000_000)
    output_tokens_per_minute: int | None = Field(default=None, ge=1, le=10_000_000_000)

    def given(self) -> dict[str, int]:
        """The budgets that were stated."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


#: The reasons that move a run to the next profile of its chain when ``fallback_on`` is not given:
#: failures another provider (or the same one, later) may well not have.
DEFAULT_FALLBACK_ON = (
    "rate_limited",
    "overloaded",
    "server_error",
    "connection",
    "timeout",
    "quota",
)
#: Every reason ``fallback_on`` may list: the defaults, a prompt too long for this model
#: (``context_window``), an answer that is not one (``invalid_response``), a model this endpoint
#: does not serve (``not_found``), and an output still invalid after this profile's repairs
#: (``invalid_output``).
FALLBACK_REASONS = frozenset(
    {*DEFAULT_FALLBACK_ON, "context_window", "invalid_response", "not_found", "invalid_output"}
)
#: Reasons refused in ``fallback_on``, and why: another profile would fail the same way, or a
#: fallback would hide a mistake that has to be fixed.
NEVER_FALL_BACK_ON = {
    "auth": "a key that is refused is a mistake to fix, not a provider to route around",
    "permission": "a key without access is a mistake to fix, not a provider to route around",
    "invalid_request": "an invalid request fails the same way on every profile",
}
_DEFAULT_REASONS = frozenset(DEFAULT_FALLBACK_ON)
#: The most profiles one ``fallback`` list may name.
MAX_FALLBACKS = 16


class Profile(BaseModel):
    """A parsed profile. It holds the *name* of the key variable, never a key."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    name: str
    provider: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")
    model: str = Field(default="", max_length=200)
    endpoint: str | None = None
    api_key_env: str | None = None
    settings: SettingsPatch = SettingsPatch()
    pricing: Pricing | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    #: Rate budgets shared by every worker of a batch (None: unlimited).
    limits: RateLimits | None = None
    #: Plain ``http://`` to a host that is not loopback (a gateway on a private network) is
    #: refused unless this is true; ``check`` warns about profiles that set it.
    allow_insecure_http: bool = False
    #: The profiles a run falls back to, in order, when this one cannot answer (each followed
    #: by its own chain; see ``profile.chain``).
    fallback: tuple[str, ...] = Field(default=(), max_length=MAX_FALLBACKS)
    #: The failure reasons that move a run from this profile to the next of its chain (None:
    #: :data:`DEFAULT_FALLBACK_ON`).
    fallback_on: tuple[str, ...] | None = None
    #: The file the profile came from (for relative paths in ``options``); not part of its hash.
    source: str | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _endpoint(self) -> Profile:
        if self.endpoint is not None:
            validate_endpoint(self.endpoint, allow_insecure_http=self.allow_insecure_http)
        return self

    @field_validator("fallback")
    @classmethod
    def _fallback(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not is_valid_profile_name(name):
                raise ValueError(
                    f"{_show(name)} is not a profile name (lowercase letters, digits, '-' or '_')"
                )
        repeated = sorted({name for name in value if value.count(name) > 1})
        if repeated:
            raise ValueError(f"names {repeated[0]!r} twice; each profile is tried once")
        return value

    @field_validator("fallback_on")
    @classmethod
    def _fallback_on(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for reason in value or ():
            why = NEVER_FALL_BACK_ON.get(reason)
            if why is not None:
                raise ValueError(f"{reason!r} never falls back: {why}")
            if reason not in FALLBACK_REASONS:
                raise ValueError(
                    f"unknown reason {_show(reason)}; expected some of: "
                    + ", ".join(sorted(FALLBACK_REASONS))
                )
        return value

    @field_validator("api_key_env")
    @classmethod
    def _api_key_env(cls, value: str | None) -> str | None:
        if value is None:
            return None
        problem = variable_name_problem("api_key_env", value)
        if problem is not None:
            raise ValueError(problem)
        return value

    def hash_form(self) -> dict[str, Any]:
        """The parsed profile as hashed for ``profile_hash`` (name and source excluded)."""
        data = self.model_dump(mode="json", exclude={"name", "source"})
        data["settings"] = self.settings.given()
        # Left out when absent, so profiles written before the key existed keep their hash.
        if self.limits is None:
            del data["limits"]
        else:
            data["limits"] = self.limits.given()
        if not self.allow_insecure_http:
            del data["allow_insecure_http"]  # the same: only a profile that sets it differs
        if not self.fallback:
            del data["fallback"]
        if self.fallback_on is None:
            del data["fallback_on"]
        return data

    @property
    def fallback_reasons(self) -> frozenset[str]:
        """The reasons that move a run from this profile to the next of its chain."""
        return _DEFAULT_REASONS if self.fallback_on is None else frozenset(self.fallback_on)
