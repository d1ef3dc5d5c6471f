"""Choosing the client from ``CC_LLM_PROVIDER``, and metering what it is asked and answers.

Every check that can fail without spending anything happens here, before the iteration starts:
an unset or unknown provider, a bad mock response, a missing SDK, a missing key, a bad base URL.
A provider's SDK is imported only when that provider is chosen.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pydantic import SecretStr

from scriptorium.errors import LLMGenerateError, translate
from scriptorium.llm.client import Client
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage, key_from_env
from scriptorium.llm.registry import ProviderConfig, ProviderSpec, Registry
from scriptorium.llm.retry.policy import RetryHooks
from scriptorium.llm.sdk_import import sdk_unavailable
from scriptorium.profile.model import validate_endpoint

__all__ = [
    "MOCK",
    "PROFILE",
    "PROVIDER_ENV",
    "MeteredClient",
    "Provider",
    "choose_provider",
]

PROVIDER_ENV = "CC_LLM_PROVIDER"
#: The kernel's own choices besides the keyed providers of the registry.
MOCK = "mock"
PROFILE = "profile"


def _choices(registry: Registry) -> tuple[str, ...]:
    keyed = [
        n for n in registry.names() if (s := registry.find(n)) is not None and s.needs_key_for({})
    ]
    return (MOCK, *keyed, PROFILE)


@dataclass(frozen=True)
class Provider:
    """The chosen provider: its client, and for a keyed provider the key and endpoint to send."""

    name: str
    client: Client
    api_key: SecretStr | None = field(default=None)
    endpoint: str | None = None


def choose_provider(
    env: Mapping[str, str],
    *,
    prompt_run: bool,
    hooks: RetryHooks | None = None,
    registry: Registry,
) -> Provider:
    """The provider ``CC_LLM_PROVIDER`` names, checked and ready to call: ``mock``, ``profile``
    (prompt runs: the prompt's profile chooses) or any provider of ``registry`` that needs a key
    (``anthropic``, ``openai``, ...), reading the key and base URL from its spec's variables.

    Raises ``LLMGenerateError`` (``reason="config"``: unset/unknown provider, bad mock response,
    ``profile`` for a raw payload, bad base URL; ``"provider_unavailable"``: SDK missing) or
    ``APIKeyEnvMissingError`` (the key variable unset, empty or too short to be a key).
    """
    name = (env.get(PROVIDER_ENV) or "").strip().lower()
    if name == MOCK:
        from scriptorium.kernel.mock import MOCK_ENV, MockClient

        return Provider(MOCK, MockClient.from_json(env.get(MOCK_ENV)))
    if name == PROFILE:
        if not prompt_run:
            raise LLMGenerateError(
                f"{PROVIDER_ENV}=profile serves prompt runs only: a raw payload has no profile",
                reason="config",
            )
        from scriptorium.llm.router import Router

        return Provider(PROFILE, Router(hooks=hooks, registry=registry))
    spec = registry.find(name) if name else None
    if spec is not None and spec.needs_key_for({}) and spec.key_env:
        return _keyed(spec, env, hooks)
    stated = "unset" if not name else f"{name[:40]!r}, which is unknown"
    raise LLMGenerateError(
        f"{PROVIDER_ENV} is {stated}: set it to one of {', '.join(_choices(registry))}",
        reason="config",
    )


def _keyed(spec: ProviderSpec, env: Mapping[str, str], hooks: RetryHooks | None) -> Provider:
    # Cheap check first (no import), so a missing SDK is reported even without a key.
    if spec.missing_libraries():
        raise _sdk_missing(spec)
    key_env = spec.key_env
    assert key_env is not None  # choose_provider checked
    key = key_from_env(env, key_env, reader=f"{PROVIDER_ENV}={spec.name}")
    endpoint = env.get(spec.base_url_env) or None if spec.base_url_env else None
    if endpoint is not None:
        with translate(
            LLMGenerateError,
            f"invalid {spec.base_url_env}",
            reason="config",
            provider=spec.name,
        ):
            endpoint = validate_endpoint(endpoint.strip())
    # The real import now (seconds, not milliseconds): a broken install fails here, as
    # configuration, rather than in the middle of the iteration.
    if spec.sdk_module is not None:
        try:
            importlib.import_module(spec.sdk_module)
        except Exception as err:
            raise _sdk_missing(spec) from err
    client = spec.client(ProviderConfig(provider=spec.name, hooks=hooks))
    return Provider(spec.name, client, SecretStr(key), endpoint)


def _sdk_missing(spec: ProviderSpec) -> LLMGenerateError:
    return sdk_unavailable(spec.name, spec.sdk_module or spec.name, spec.extra or spec.name)


class MeteredClient:
    """A ``Client`` around another that announces each call and sums the usage of each response.

    The sum is what the kernel charges, also when the run fails after a response came back (a
    validator failure, say): tokens spent are charged whether or not the run completes. With
    ``free_replays``, a response served from a replay cassette (``metadata["replayed"]``) counts
    as received but adds nothing: nobody paid for those tokens now. ``allowed`` is asked before
    each call: when it says no (the kernel was told to stop, or its supervisor is gone), the call
    is not made (``LLMGenerateError``, reason ``cancelled``).
    """

    def __init__(
        self,
        inner: Client,
        on_call: Callable[[LLMRequest], None],
        *,
        free_replays: bool = True,
        allowed: Callable[[], bool] | None = None,
    ) -> None:
        self._inner = inner
        self._on_call = on_call
        self._free_replays = free_replays
        self._allowed = allowed
        #: Calls started, and responses received.
        self.calls = 0
        self.responses = 0
        self.usage = Usage()

    def generate(self, request: LLMRequest) -> LLMResponse:
        """Announce the call, delegate, and count what came back."""
        if self._allowed is not None and not self._allowed():
            raise LLMGenerateError(
                "not calling the model: the kernel was stopped, or nobody reads its output",
                reason="cancelled",
            )
        self.calls += 1
        self._on_call(request)
        response = self._inner.generate(request)
        if isinstance(response, LLMResponse):
            self.responses += 1
            if not (self._free_replays and response.metadata.get("replayed") is True):
                self.usage = self.usage + response.usage
        return response
